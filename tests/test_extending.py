"""Users' own datasets and templates get T0's naming, features and rules; the Hub store reads
a user's pinned parquet files from a local Hub root (no network)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import seqio
from helpers.templates import template_entry, write_templates

from p3data import t0
from p3data.datasets.catalog import (
    ENV_CATALOG,
    Catalog,
    DatasetEntry,
    HubLocation,
    read_catalog_file,
)
from p3data.datasets.hub import HubStore
from p3data.registry import register_mixture, register_prompted
from p3data.templates import TemplateCollection
from p3data.templates.collection import ENV_TEMPLATE_DIRS, TemplateSource, default_sources

CATALOG = """
- dataset: my_reviews
  subset: v1
  splits: {train: 4, validation: 2}
  features: {text: string, label: {class_label: [bad, good]}}
"""


@pytest.mark.usefixtures("samples_in_seqio")  # the sample vocabulary
def test_register_own_dataset_templates_and_mixture(tmp_path):
    templates = tmp_path / "templates"
    write_templates(templates, "my_reviews", "v1", template_entry(
        "my-1", "Is it good?", "{{ text }} Is it good? ||| {{ answer_choices[label] }}",
        answer_choices="no ||| yes") + template_entry("my-2", "Echo", "{{ text }} ||| {{ text }}"))
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(CATALOG)
    mirror = tmp_path / "mirror" / "my_reviews" / "v1"
    mirror.mkdir(parents=True)
    rows = [{"text": f"review {i}", "label": i % 2} for i in range(4)]
    (mirror / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    names = register_prompted([catalog], [templates], data_dir=tmp_path / "mirror")
    assert sorted(names) == ["my_reviews_v1_Echo", "my_reviews_v1_Is_it_good_",
                             "my_reviews_v1_Is_it_good__score_eval"]
    register_mixture("my_mixture", ["my_reviews_v1_Echo", "my_reviews_v1_Is_it_good_"],
                     rates={"my_reviews_v1_Echo": 1, "my_reviews_v1_Is_it_good_": 3})
    mixture = seqio.get_mixture_or_task("my_mixture")
    assert mixture.get_rate(seqio.get_mixture_or_task("my_reviews_v1_Is_it_good_")) == 3
    task = seqio.get_mixture_or_task("my_reviews_v1_Is_it_good_")
    examples = list(task.get_dataset(None, split="train", shuffle=False).as_numpy_iterator())
    assert [e["targets_pretokenized"].decode() for e in examples] == ["no", "yes", "no", "yes"]
    assert all(e["targets"][-1] == 1 for e in examples)


def test_hub_store_reads_a_users_pinned_parquet_files(tmp_path):
    """A user's own Hub dataset: its catalog entry pins the files; a Hub root serves them."""
    hub_root = tmp_path / "hub"
    export = hub_root / "me" / "reviews" / "v1.0" / "cfg"
    export.mkdir(parents=True)
    table = pa.table({"sentence": [f"s{i}" for i in range(5)], "lbl": [0, 1, 0, 1, 1],
                      "extra": ["x"] * 5})
    pq.write_table(table, export / "train-00000-of-00001.parquet", row_group_size=2)
    entry = DatasetEntry(
        dataset="toy", subset=None, splits={"train": 5},
        features={"sentence": "string", "label": "int64"},
        hub=HubLocation(repo="me/reviews", revision="v1.0", files={"train": ("cfg/train-*",)},
                        columns={"lbl": "label"}))
    store = HubStore(entry, hub_root=str(hub_root), rows_per_shard=2)
    shards = store.list_shards("train")
    assert [(s.start, s.stop) for s in shards] == [(0, 2), (2, 4), (4, 5)]
    rows = [row for shard in shards for row in store.read("train", shard)]
    assert rows == [{"sentence": f"s{i}", "label": v} for i, v in enumerate([0, 1, 0, 1, 1])]


def test_catalog_has_hub_locations_or_says_why_not():
    for entry in Catalog.load():
        assert entry.hub.repo or entry.hub.notes, entry.name


def _colliding_templates(tmp_path):
    """A catalog entry and two templates, "Is it good?" and "Is it good!", whose task names
    are the same: `my_reviews_v1_Is_it_good_`."""
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(CATALOG + "  train_size: 1000000\n")
    templates = tmp_path / "templates"
    path = write_templates(templates, "my_reviews", "v1", template_entry(
        "id-question", "Is it good?", "{{ text }} Is it good? ||| {{ text }}")
        + template_entry("id-bang", "Is it good!", "{{ text }} Is it good! ||| {{ text }}")
        + template_entry("id-echo", "Echo", "{{ text }} ||| {{ text }}"))
    return catalog, templates, path


def test_task_name_collision_skips_the_later_template_naming_both(tmp_path, caplog):
    catalog_file, templates, path = _colliding_templates(tmp_path)
    catalog = Catalog([*Catalog.load(), *read_catalog_file(catalog_file)])
    collection = TemplateCollection([*default_sources(), TemplateSource(templates, "mine")])
    with caplog.at_level(logging.WARNING, logger="p3data.t0"):
        definitions = t0.define(catalog, collection)

    mine = sorted(name for name in definitions.tasks if name.startswith("my_reviews"))
    assert mine == ["my_reviews_v1_Echo", "my_reviews_v1_Is_it_good_"]
    # "Is it good!" sorts before "Is it good?", so it has the task; the other is skipped
    assert definitions.tasks["my_reviews_v1_Is_it_good_"].template.id == "id-bang"
    [skipped] = definitions.skipped
    assert (skipped.template.id, skipped.kept.id) == ("id-question", "id-bang")
    message = caplog.records[-1].getMessage()
    assert str(path) in message and "'Is it good?'" in message and "'Is it good!'" in message
    assert "my_reviews_v1_Is_it_good_" in message
    # above 500k rows, T0's cap is shared by the dataset's two remaining templates, not three
    assert definitions.tasks["my_reviews_v1_Echo"].cap == 500_000 // 2
    t0_only = t0.define(Catalog.load(), TemplateCollection.default())
    assert len(definitions.tasks) == len(t0_only.tasks) + 2  # T0's tasks are untouched


def test_import_p3data_tasks_survives_a_task_name_collision(tmp_path):
    catalog, templates, _ = _colliding_templates(tmp_path)
    env = {**os.environ, ENV_CATALOG: str(catalog), ENV_TEMPLATE_DIRS: str(templates)}
    result = subprocess.run(
        [sys.executable, "-c", "import re, seqio, p3data.tasks; "
         "names = [n for n in seqio.TaskRegistry.names() if n.startswith('my_reviews')]; "
         "variants = [n for n in names if re.search(r'_[0-9]+shot$', n)]; "
         "print(len(names) - len(variants), len(variants))"],
        env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["2", "8"]  # the kept template's task and twin, 4 variants each
    assert "is skipped: its task name 'my_reviews_v1_Is_it_good_'" in result.stderr
