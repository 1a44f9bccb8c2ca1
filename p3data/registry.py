"""Turning task and mixture specs into registered seqio Tasks and Mixtures.

`p3data.tasks` uses this for T0's definitions and their few-shot variants; users use it for
their own datasets and templates (see `register_prompted`) and variant mixtures (see
`register_variant_mixture`), getting the same naming, features and rules.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import seqio

from p3data import metrics, t0
from p3data.datasets.catalog import Catalog, read_catalog_file
from p3data.fewshot import VariantMixture, VariantSpec
from p3data.format.features import FEWSHOT_FEATURES, TOKEN_FEATURES
from p3data.gc_policy import collection_paused
from p3data.preprocessors import rank_classification
from p3data.sources import FewshotSource, PromptedSource, tf_dtype
from p3data.taskset import RATE_SPLIT, MixtureDef, TaskDef, TaskSet
from p3data.templates import Template, TemplateCollection
from p3data.templates.render import CompiledTemplate
from p3data.vocab import T5, Vocabulary


class ConfiguredVocabulary(seqio.SentencePieceVocabulary):
    """A collection's SentencePiece vocabulary (`p3data.vocab.Vocabulary`), its file chosen
    lazily.

    It is, and compares equal to, `seqio.SentencePieceVocabulary(<the chosen file>,
    extra_ids=<the collection's>)` before and after first use: seqio compares vocabularies by
    their pickled state, and T5X refuses to train when the model's vocabulary and the task's
    differ.
    """

    def __init__(self, vocabulary: Vocabulary = T5) -> None:
        super().__init__(sentencepiece_model_file="", extra_ids=vocabulary.extra_ids)
        self._chosen_by = vocabulary.path

    def _model_context(self):
        if self._model is None:
            self._sentencepiece_model_file = self._chosen_by()
        return super()._model_context()

    @property
    def sentencepiece_model_file(self) -> str:
        return self._sentencepiece_model_file or self._chosen_by()

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        del state["_chosen_by"]  # not seqio's: equal to a plain vocabulary of the same file
        return {**state, "_sentencepiece_model_file": self.sentencepiece_model_file}

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._chosen_by = lambda: state["_sentencepiece_model_file"]


@functools.cache
def output_features(vocabulary: Vocabulary = T5) -> dict[str, seqio.Feature]:
    """A collection's tasks' features: one vocabulary object per collection's vocabulary."""
    tokens = ConfiguredVocabulary(vocabulary)
    return {name: seqio.Feature(tokens, add_eos=feature.add_eos, dtype=tf_dtype(feature))
            for name, feature in TOKEN_FEATURES.items()}


OUTPUT_FEATURES = output_features(T5)  # T0's tasks'
VOCABULARY = OUTPUT_FEATURES["inputs"].vocabulary
# seqio's implementation of `t0.MixtureSpec.rate` for mixtures weighed by examples: it reads
# the examples from each task's cache when the mixture is used.
EVAL_RATE = functools.partial(seqio.mixing_rate_num_examples,
                              maximum=t0.MAX_EXAMPLES_PER_DATASET)


@functools.cache
def fixed_answer_choices(template: Template) -> tuple[str, ...] | None:
    """Compiled on first use, never at import."""
    choices = CompiledTemplate(template).fixed_answer_choices
    return tuple(choices) if choices is not None else None


def _postprocess(template: Template, output: Any, example: Any = None,
                 is_target: bool = False) -> Any:
    choices = fixed_answer_choices(template)
    return metrics.class_id_postprocessor(list(choices) if choices else None)(
        output, example=example, is_target=is_target)


def _rank_metric(template: Template, targets: Any, scores: Any) -> dict[str, float]:
    """seqio passes log-likelihood scores to metrics whose second argument is `scores`."""
    choices = fixed_answer_choices(template)
    return metrics.rank_classification(num_classes=len(choices) if choices else None)(
        targets, scores)


def register_task(spec: t0.TaskSpec, data_dir: str | os.PathLike | None = None) -> seqio.Task:
    """One seqio Task: tokenize, EOS on targets, then a cache placeholder (like T0's)."""
    source = PromptedSource(spec.entry, spec.template, spec.split_mapping, data_dir=data_dir,
                            rule=spec.row_rule, step=spec.dataset_step)
    return _add_task(spec.name, spec, source)


def register_variant(variant: VariantSpec,
                     data_dir: str | os.PathLike | None = None) -> seqio.Task:
    """A few-shot variant: its task's preprocessors and metrics over a `FewshotSource`; a
    `_score_eval` variant's choices keep `num_shots` and `exemplar_rows`."""
    return _add_task(variant.name, variant.base, FewshotSource(variant, data_dir=data_dir),
                     keep=FEWSHOT_FEATURES)


def _add_task(name: str, spec: t0.TaskSpec, source: seqio.DataSource,
              keep: tuple[str, ...] = ()) -> seqio.Task:
    cached = [seqio.preprocessors.tokenize, seqio.preprocessors.append_eos,
              seqio.CacheDatasetPlaceholder(required=False)]
    if spec.score_eval:
        ranked = functools.partial(rank_classification, keep=keep) if keep else (
            rank_classification)
        preprocessors = [ranked, *cached]
        metric_fns = [functools.partial(_rank_metric, spec.template)]
        postprocess_fn = metrics.rank_classification_postprocessor
    else:
        preprocessors = cached
        metric_fns = metrics.task_metrics(spec.entry.dataset, spec.entry.subset,
                                          spec.template.metadata.metrics or ())
        postprocess_fn = functools.partial(_postprocess, spec.template)
    return seqio.TaskRegistry.add(
        name,
        source=source,
        preprocessors=preprocessors,
        output_features=output_features(spec.vocabulary),
        metric_fns=metric_fns,
        postprocess_fn=postprocess_fn,
    )


def register_mixture(name: str, tasks: Iterable[str],
                     rates: Mapping[str, float] | None = None) -> seqio.Mixture:
    """Fixed per-task rates (like T0's training caps), or else T0's rule for evaluation
    mixtures: the examples in each task's cache, at most `t0.MAX_EXAMPLES_PER_DATASET`."""
    tasks = list(tasks)
    if rates is not None:
        return seqio.MixtureRegistry.add(name, [(task, rates[task]) for task in tasks])
    return seqio.MixtureRegistry.add(name, tasks, default_rate=EVAL_RATE)


def register_mixture_spec(mixture: MixtureDef,
                          tasks: Mapping[str, TaskDef]) -> seqio.Mixture | None:
    """A mixture of tasks registered already (`tasks`: their specs by name), at the rates its
    rule gives: fixed for mixtures weighed by caps (like T0's training mixtures), else from
    seqio's count of each task's cached examples (`_examples_rate`). None when the mixture has
    no task."""
    members = [tasks[name] for name in mixture.tasks]
    if not members:
        return None
    if mixture.rate_by_cap:
        return seqio.MixtureRegistry.add(mixture.name,
                                         [(spec.name, mixture.rate(spec)) for spec in members])
    return seqio.MixtureRegistry.add(mixture.name, [(spec.name, _examples_rate(mixture, spec))
                                                    for spec in members])


def _examples_rate(mixture: MixtureDef, spec: TaskDef) -> Callable[[seqio.Task], float]:
    """A task's rate from its cache: seqio's `mixing_rate_num_examples` (`EVAL_RATE`: the
    train split, at most `t0.MAX_EXAMPLES_PER_DATASET`) times its share when the rule has no
    rate before a build (T0's); else the rule's rate of the train split's examples, its
    placeholder before a build (xP3's, `_kept_rate`)."""
    if mixture.rate(spec) is not None:
        return functools.partial(_kept_rate, rate=functools.partial(mixture.rate, spec))
    share = mixture.share(spec)
    return EVAL_RATE if share == 1 else functools.partial(_shared_rate, share=share)


def _kept_rate(task: seqio.Task, *, rate: Callable[[int | None], float]) -> float:
    """`rate` of the examples in the train split of the task's cache, read from seqio's cached
    stats as `mixing_rate_num_examples` reads them; of None when seqio finds no cache (the
    rule's rate before a build: xP3's placeholder)."""
    return rate(task.get_cached_stats(RATE_SPLIT)["examples"] if task.cache_dir else None)


def register_spec(spec: TaskDef, data_dir: str | os.PathLike | None = None) -> seqio.Task:
    """A task of any collection, as its kind is registered."""
    if isinstance(spec, VariantSpec):
        return register_variant(spec, data_dir)
    return register_task(spec, data_dir)


def register_definitions(definitions: TaskSet, *, collections: Iterable[str] | None = None,
                         data_dir: str | os.PathLike | None = None) -> None:
    """Every task and mixture of `definitions` (e.g. `p3data.taskset.load_definitions()`), or
    those the named `collections` contributed (the others registered already, or not wanted)."""
    parts = [definitions.part(name) for name in collections or definitions.parts]
    # registering thousands of tasks allocates many small objects, and each collection that
    # triggers walks TensorFlow's whole heap: paused, 4,915 tasks take 0.1 s, not seconds
    with collection_paused():
        for part in parts:
            for spec in part.tasks.values():
                register_spec(spec, data_dir)
        for part in parts:
            for mixture in part.mixtures.values():
                register_mixture_spec(mixture, definitions.tasks)


def _shared_rate(task: seqio.Task, share: float) -> float:
    return EVAL_RATE(task) * share


def register_variant_mixture(mixture: VariantMixture, *,
                             data_dir: str | os.PathLike | None = None) -> seqio.Mixture | None:
    """A variant mixture (e.g. of `fewshot.define_variant_mixture`), and its variants not yet
    registered. Each task's T0 rate is split by the settings' ratio: fixed rates for mixtures
    weighed by T0's caps, else seqio's `mixing_rate_num_examples` times the share. None when
    the mixture has no task."""
    registered = set(seqio.TaskRegistry.names())
    for variant in mixture.variants:
        if variant.name not in registered:
            register_variant(variant, data_dir)
    return register_mixture_spec(mixture, {v.name: v for v in mixture.variants})


def register_prompted(
    catalog_files: Iterable[str | os.PathLike] = (),
    template_dirs: Iterable[str | os.PathLike] = (),
    data_dir: str | os.PathLike | None = None,
) -> list[str]:
    """Register tasks for datasets in extra catalog files, with T0's naming and features.

    Templates come from promptsource, the project and `template_dirs` (later ones override by
    id). Only datasets of the given catalog files get tasks here; T0's own tasks are
    registered by `import p3data.tasks`. Returns the names of the new tasks.
    """
    catalog = Catalog(entry for path in catalog_files for entry in read_catalog_file(Path(path)))
    definitions = t0.define(catalog, TemplateCollection.default(template_dirs))
    for spec in definitions.tasks.values():
        register_task(spec, data_dir)
    return list(definitions.tasks)
