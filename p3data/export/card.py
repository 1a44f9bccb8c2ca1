"""The dataset card (`<out>/README.md`): what `datasets.load_dataset` reads of an export
folder, and what people read first."""

from __future__ import annotations

from collections.abc import Sequence

from p3data.export.exported import ExportedTask
from p3data.export.naming import split_glob
from p3data.export.schema import CARD_DTYPES, FeatureSpec

TITLE = "# T0's prompted tasks, exported by p3data"  # the card's, which tells it apart


def card_text(exports: Sequence[ExportedTask]) -> str:
    """README.md: YAML `configs` (a config per task, a file glob per split with examples) and
    `dataset_info` (features, split sizes) as `datasets` reads them, then a table of tasks."""
    import yaml

    from p3data.tables import markdown_table

    configs = {r.task: (r, {split: s for split, s in r.splits.items() if s.examples})
               for r in exports}
    configs = {task: (r, splits) for task, (r, splits) in configs.items() if splits}
    header = {
        "configs": [{"config_name": task, "data_files": [
            {"split": split, "path": split_glob(task, split, r.settings.extension)}
            for split in splits]} for task, (r, splits) in configs.items()],
        "dataset_info": [{
            "config_name": task,
            "features": [_card_feature(name, spec) for name, spec in r.features.items()],
            "splits": [{"name": split, "num_bytes": s.num_bytes, "num_examples": s.examples}
                       for split, s in splits.items()],
            "download_size": sum(r.files.values()),
            "dataset_size": sum(s.num_bytes for s in splits.values()),
        } for task, (r, splits) in configs.items()],
    }
    rows = [[task, ", ".join(splits), sum(s.examples for s in splits.values())]
            for task, (_, splits) in configs.items()]
    example = next(iter(configs), "<task>")
    return "\n".join([
        "---", yaml.safe_dump(header, sort_keys=False, allow_unicode=True).rstrip(), "---", "",
        TITLE, "",
        "One config per task, laid out as P3 is on the Hub (`<task>/<split>-NNNNN-of-MMMMM`): "
        "`inputs` and `targets` are token ids (`targets` ends with EOS), "
        "`inputs_pretokenized` and `targets_pretokenized` their texts; tasks whose template "
        "has answer choices add `answer_choices`, the `_score_eval` twins `idx`, `is_correct` "
        "and `weight`. Splits without examples have no files.", "",
        "```python", "import datasets", "",
        f'datasets.load_dataset("path/to/this/folder", "{example}")', "```", "",
        markdown_table(["task", "splits", "examples"], rows), ""])


def _card_feature(name: str, spec: FeatureSpec) -> dict[str, str]:
    return {"name": name, "list" if spec.sequence else "dtype": CARD_DTYPES[spec.dtype]}
