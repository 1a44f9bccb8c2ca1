"""An export folder as a whole: the dataset card p3data export writes there, and which folders
it may write into at all.

p3data never overwrites or deletes a file it did not write, so `p3data export` writes only
into a folder that is missing, empty, or an export p3data made: its card (README.md, which it
rewrites), its task folders (each holds the task's record, written first), its lock and its
temporaries. Anything else there is the user's, and the folder is refused. So is the cache
itself, a folder inside it (its files would be the cache's) or one holding it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import TYPE_CHECKING

from p3data import fs
from p3data.errors import P3DataError
from p3data.lock import LOCK

if TYPE_CHECKING:
    from p3data.export import FeatureSpec, TaskRecord

CARD = "README.md"
RECORD = ".p3data-export.json"  # in each task folder: what was exported, from what, how
TITLE = "# T0's prompted tasks, exported by p3data"  # the card's, which tells it apart
# TensorFlow's dtype names (info.<split>.json) as `datasets` card dtypes.
CARD_DTYPES = {"int32": "int32", "int64": "int64", "float32": "float32", "float64": "float64",
               "bool": "bool", "string": "string"}


# Where to write ----------------------------------------------------------------------------

def refuse_unless_ours(out: str, *, cache: str) -> None:
    """One error line unless `out` is missing, empty or an export p3data made, and apart from
    the cache at `cache`. Checked before the lock is taken, so a refusal creates nothing."""
    target, source = _normal(out), _normal(cache)
    if target == source:
        raise P3DataError(f"{out}: is the cache itself; export to a folder of its own")
    if target.startswith(source + "/"):
        raise P3DataError(f"{out}: is inside the cache {cache} (seqio and p3data would read "
                          "what is written there as the cache's); export to a folder outside it")
    if source.startswith(target + "/"):
        raise P3DataError(f"{out}: holds the cache {cache}; export to a folder of its own")
    if not fs.exists(out):
        return
    if not fs.is_dir(out):
        raise P3DataError(f"{out}: is a file, not a folder; choose another output folder")
    if (foreign := _foreign(out)) is not None:
        raise P3DataError(f"{foreign}: not written by p3data export, so {out} is not an export "
                          "p3data made; export to an empty folder or one p3data export wrote")


def _normal(path: str) -> str:
    """`path` as listings spell it, `..` and `.` resolved, so that paths compare as strings."""
    protocol, _, rest = fs.canonical(path).rpartition("://")
    return f"{protocol}://{posixpath.normpath(rest)}" if protocol else posixpath.normpath(rest)


def _foreign(out: str) -> str | None:
    """The first thing in `out` that p3data export did not write, if any."""
    filesystem, local = fs.resolve(out)
    for entry in sorted(filesystem.ls(local, detail=True), key=lambda entry: entry["name"]):
        name = fs.name_of(entry["name"])
        path = fs.join(out, name)
        if entry["type"] == "directory":
            if not _task_folder(path):
                return path
        elif name == CARD:
            if TITLE not in fs.read_bytes(path).decode("utf-8", "replace"):
                return path
        elif name != LOCK and not fs.is_temporary(name):
            return path
    return None


def _task_folder(path: str) -> bool:
    """A task folder p3data export made: it holds the task's record (written first), or at
    most the temporaries of a run killed before that record was in place."""
    names = [file[len(fs.canonical(path)) + 1:] for file in fs.walk_files(path)]
    return RECORD in names or all(fs.is_temporary(name) for name in names)


# The card ----------------------------------------------------------------------------------

def split_glob(task: str, split: str, extension: str) -> str:
    """The card's pattern of a split's files, relative to the card."""
    return f"{task}/{split}-*{extension}"  # split names are words: `train-*` is train's only


def card_text(records: Sequence[TaskRecord]) -> str:
    """README.md: YAML `configs` (a config per task, a file glob per split with examples) and
    `dataset_info` (features, split sizes) as `datasets` reads them, then a table of tasks."""
    import yaml

    from p3data.tables import markdown_table

    configs = {r.task: (r, {split: s for split, s in r.splits.items() if s.examples})
               for r in records}
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
