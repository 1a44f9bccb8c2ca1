"""The dataset card (`<out>/README.md`): what `datasets.load_dataset` reads of an export
folder, and what people read first."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from p3data.export.exported import ExportedSplit, ExportedTask
from p3data.export.naming import split_glob, split_order
from p3data.export.provenance import FIELDS
from p3data.export.schema import CARD_DTYPES, FeatureSpec
from p3data.export.shapes import P3, export_shape

TITLE = "# T0's prompted tasks, exported by p3data"  # the card's, which tells it apart
ALL_TASKS = "all_tasks"  # an SFT export's config of every task together


def card_text(exports: Sequence[ExportedTask]) -> str:
    """README.md: YAML `configs` (a config per task, a file glob per split with examples) and
    `dataset_info` (features, split sizes) as `datasets` reads them, then a table of tasks."""
    import yaml

    from p3data.tables import markdown_table

    configs = {r.task: (r, {split: s for split, s in r.splits.items() if s.examples})
               for r in exports}
    configs = {task: (r, splits) for task, (r, splits) in configs.items() if splits}
    shape = export_shape(exports[0].settings.shape if exports else P3)
    entries = [_config(task, {split: split_glob(task, split, r.settings.extension)
                              for split in splits}, splits, download_size=sum(r.files.values()),
                       features=shape.all_card_features() if shape.sft else
                       [_card_feature(name, spec) for name, spec in r.features.items()])
               for task, (r, splits) in configs.items()]
    together = shape.sft and configs and ALL_TASKS not in configs
    if together:  # one schema for every task: their splits load as one
        entries.append(_all_tasks(exports[0].settings.extension, configs.values(),
                                  shape.all_card_features()))
    header = {"configs": [config for config, _ in entries],
              "dataset_info": [info for _, info in entries]}
    rows = [[task, ", ".join(splits), sum(s.examples for s in splits.values()),
             *([_unknown(splits)] if shape.sft else [])]
            for task, (_, splits) in configs.items()]
    example = next(iter(configs), "<task>")
    return "\n".join([
        "---", yaml.safe_dump(header, sort_keys=False, allow_unicode=True).rstrip(), "---", "",
        TITLE, "",
        (f"Shape `{shape.name}`. " if shape.sft else "") + "One config per task, laid out as "
        f"P3 is on the Hub (`<task>/<split>-NNNNN-of-MMMMM`): {shape.about} Splits without "
        "examples have no files.", "",
        *(_provenance() if shape.sft else []),
        "```python", "import datasets", "",
        f'datasets.load_dataset("path/to/this/folder", "{example}")',
        *([f'datasets.load_dataset("path/to/this/folder", "{ALL_TASKS}", split="train")  '
           "# every task's train split as one"] if together else []),
        "```", "",
        markdown_table(["task", "splits", "examples",
                        *(["provenance unknown"] if shape.sft else [])], rows), ""])


def _config(name: str, globs: dict[str, str], splits: dict[str, ExportedSplit], *,
            download_size: int, features: list[dict]) -> tuple[dict, dict]:
    """A config's `configs` entry (a file glob per split) and its `dataset_info` entry."""
    return ({"config_name": name, "data_files": [{"split": split, "path": glob}
                                                 for split, glob in globs.items()]},
            {"config_name": name, "features": features,
             "splits": [{"name": split, "num_bytes": s.num_bytes, "num_examples": s.examples}
                        for split, s in splits.items()],
             "download_size": download_size,
             "dataset_size": sum(s.num_bytes for s in splits.values())})


def _all_tasks(extension: str, configs: Iterable[tuple[ExportedTask, dict[str, ExportedSplit]]],
               features: list[dict]) -> tuple[dict, dict]:
    """The config of every task together, each split the same split of every task."""
    configs = list(configs)
    names = sorted({split for _, splits in configs for split in splits}, key=split_order)
    splits = {split: ExportedSplit(
        examples=sum(s[split].examples for _, s in configs if split in s),
        num_bytes=sum(s[split].num_bytes for _, s in configs if split in s), files={})
        for split in names}
    return _config(ALL_TASKS, {split: split_glob("*", split, extension) for split in names},
                   splits, download_size=sum(sum(r.files.values()) for r, _ in configs),
                   features=features)


def _provenance() -> list[str]:
    fields = ", ".join(f"`{name}`" for name in FIELDS)
    return [
        f"Every row has a `provenance` struct, the same in every task ({fields}), so that "
        "tasks load together: the task, its template, the dataset and subset, the task split "
        "and the source split, the repository and revision rows were read from (recorded "
        "for rows read from the Hub; rows from a mirror or sample files are recorded by "
        "their files' sha256 in the cache's manifest.json instead), the source row (the row's "
        "number in its source split), and for few-shot variants the shot count, the "
        "exemplars' split and their rows. Rows are in source order. Score-eval twins are "
        "not exported in this shape. A field the cache does not record is null, never "
        "guessed: the table's last column names them for each task (with the splits, where "
        "not all). `row` is known where no row of the split was left out (by the template, "
        "a render error or a cap).", ""]


def _unknown(splits: dict[str, ExportedSplit]) -> str:
    """The provenance fields a task's rows leave null, and in which splits if not all."""
    fields = dict.fromkeys(name for s in splits.values() for name in s.unknown)
    said = []
    for name in fields:
        where = [split for split, s in splits.items() if name in s.unknown]
        said.append(name if len(where) == len(splits) else f"{name} ({', '.join(where)})")
    return ", ".join(said) or "none"


def _card_feature(name: str, spec: FeatureSpec) -> dict[str, str]:
    return {"name": name, "list" if spec.sequence else "dtype": CARD_DTYPES[spec.dtype]}
