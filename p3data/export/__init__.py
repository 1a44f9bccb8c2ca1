"""A cache as the folder P3 is on the Hub today: parquet (or JSON lines) for any trainer.

    <out>/README.md                                    the dataset card, written last
    <out>/<task>/<split>-NNNNN-of-MMMMM.parquet        or .jsonl
    <out>/<task>/.p3data-export.json                   what was exported, from what, how

Examples are read through `p3data.read` (no TensorFlow) and written shard by shard in row
groups of bounded size, so memory stays flat whatever the cache's size. Columns are typed from
the task's `info.<split>.json`, not inferred from values. A split without examples has no file
and is not in the card, as in P3: `datasets` cannot load a split without rows.
A split is written under hidden temporary names and renamed once whole; the task's record then
names it, so a rerun with the same settings from the same cache skips what is done and redoes
the rest. The card's `configs` (one per task, a file glob per split) and `dataset_info`
(features, split sizes) let `datasets.load_dataset(out, task)` load any split name, and
`load_dataset("parquet", data_dir=out/task)` works too (it names splits by keyword: train,
validation/val, test).

`--shape prompt-completion` or `messages` writes TRL's standard rows instead of P3's columns
(the cache's texts exactly, a `provenance` struct on each, in source order), and the card a
config `all_tasks` of every task together.

Bottom up: `naming` (file names), `schema` (features as typed columns), `parquet` and `jsonl`
(a writer per format), `formats` (the formats registered: name, extension, writer),
`provenance` (where each example came from, as far as the cache records it), `shapes` (the
row shapes registered: P3's columns, TRL's prompt-completion and messages), `exported`
(settings, and what each task folder says was exported), `card` (README.md),
`selection` (which tasks), `task` (one task's splits), `folder` (the folder as a whole: where
p3data may write, and the run over all tasks).
"""

# What users may use (`p3data.export_tasks` too); the rest is imported from its module.
from p3data.export.exported import ExportSettings
from p3data.export.folder import export_tasks
from p3data.export.task import TaskExportOutcome

__all__ = ["ExportSettings", "TaskExportOutcome", "export_tasks"]
