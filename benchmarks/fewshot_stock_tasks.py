"""Few-shot reference tasks for `fewshot.py`: stock seqio doing p3data's few-shot job.

For every template of the benchmark's datasets and k in 1, 3, 5, `t0style_<task>_<k>shot`:
seqio's `FewshotDataSource` over the T0-style source of `t0_style_tasks` (the same rendered
rows), k exemplars from the train split, then `fewshot_preprocessor` joining them FLAN's way
(each exemplar `inputs + "\\n\\n" + targets`, exemplars and query joined by `"\\n\\n\\n"`), then
tokenize, append_eos and a cache placeholder, with the same vocabulary. Stock draws exemplars
from a 1,000-row shuffle buffer and neither keeps the query out nor fits the prompt to a length:
it does less than p3data, never more. Imported by `seqio_cache_tasks
--module_import=fewshot_stock_tasks`.
"""

from __future__ import annotations

import functools

import seqio
from promptsource.templates import DatasetTemplates
from seqio.experimental import FewshotDataSource, fewshot_preprocessor
from t0_style_tasks import FEATURES, PREFIX, dataset_fn

from p3data.t0 import task_name

DATASETS = [("app_reviews", None), ("dbpedia_14", None), ("web_questions", None),
            ("imdb", None), ("cnn_dailymail", "3.0.0")]
SHOTS = (1, 3, 5)


def register(datasets: list[tuple[str, str | None]]) -> None:
    for dataset, subset in datasets:
        for name in DatasetTemplates(dataset, subset).all_template_names:
            source = seqio.FunctionDataSource(
                functools.partial(dataset_fn, dataset=dataset, subset=subset,
                                  template_name=name),
                splits=["train"])
            for k in SHOTS:
                seqio.TaskRegistry.add(
                    f"{PREFIX}{task_name(dataset, subset, name)}_{k}shot",
                    source=FewshotDataSource(source, num_shots=k, train_split="train"),
                    preprocessors=[
                        functools.partial(fewshot_preprocessor, inputs_prefix="",
                                          targets_prefix="\n\n", example_separator="\n\n\n"),
                        seqio.preprocessors.tokenize, seqio.preprocessors.append_eos,
                        seqio.CacheDatasetPlaceholder(required=False)],
                    output_features=FEATURES,
                )


register(DATASETS)
