"""Object requests that go together, against the local GCS-compatible server: deletes in batch
requests where the store takes them and one by one (concurrently) where it refuses them, as
fake-gcs-server does; uploads sent in the background until a step's end of bundle; reads of
several objects at once."""

from __future__ import annotations

import pytest
from helpers.gcs import Refusing, Rule

from p3data import fs, object_store
from p3data.errors import P3DataError
from p3data.object_store import IN_FLIGHT, background

pytestmark = pytest.mark.usefixtures("gcs_server")


@pytest.fixture
def batches_unknown(monkeypatch):
    """A process that has not yet sent the store a batch request."""
    monkeypatch.setattr(object_store, "_BATCHLESS", set())


def objects(root: str, count: int) -> list[str]:
    paths = [f"{root}/{i:03d}" for i in range(count)]
    fs.write_files({path: path.encode() for path in paths})
    return paths


def refusing_delete_of(name: str) -> Rule:
    """A proxy's rule: no permission to delete the object `name` (in a test's bucket)."""
    target = "/o/" + name.replace("/", "%2F")

    def refuse(method: str, path: str, body: bytes) -> int | None:
        return 403 if method == "DELETE" and path.endswith(target) else None

    return refuse


@pytest.mark.usefixtures("batches_unknown")
def test_a_refused_batch_delete_falls_back_to_deleting_one_by_one(gcs_server, bucket):
    """fake-gcs-server answers every part of a batch request 400: the batch's objects are
    deleted one request each, and the process sends no batch again."""
    paths = objects(f"{bucket}/work", 150)
    with gcs_server.counting() as count:
        fs.delete_tree(f"{bucket}/work")
    assert fs.walk_files(bucket) == []
    batches = [r for r in count.requests if r.target.startswith("/batch/")]
    assert [(r.method, r.status) for r in batches] == [("POST", 200)]  # the first, alone
    deletes = [r for r in count.requests if r.method == "DELETE"]
    assert len(deletes) == len(paths) and {r.status for r in deletes} == {200}
    assert count.total == 1 + 1 + len(paths), count.describe()  # the listing, the batch

    paths = objects(f"{bucket}/more", 3)
    with gcs_server.counting() as count:
        fs.delete([*paths, f"{bucket}/more/absent"])  # an object already gone is fine
    assert [r.method for r in count.requests] == ["DELETE"] * 4
    assert fs.walk_files(bucket) == []


@pytest.mark.usefixtures("batches_unknown")
def test_an_object_the_store_will_not_delete_is_one_line_naming_it(gcs_server, bucket,
                                                                    monkeypatch):
    paths = objects(f"{bucket}/work", 5)
    with Refusing(gcs_server.url, refusing_delete_of("work/003")) as proxy:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxy.url)
        with pytest.raises(P3DataError) as refused:
            fs.delete(paths)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_server.url)
    assert str(refused.value).startswith(f"{paths[3]}: cannot delete it: permission denied")
    assert fs.walk_files(bucket) == [paths[3]]  # the others are deleted all the same


@pytest.mark.usefixtures("batches_unknown")
def test_a_folder_deleted_in_the_background_is_gone_once_waited_for(gcs_server, bucket,
                                                                     monkeypatch):
    objects(f"{bucket}/done", 40)
    kept = objects(f"{bucket}/kept", 2)
    fs.delete_tree(f"{bucket}/done", later=True)
    fs.delete_tree(f"{bucket}/never-made", later=True)
    fs.wait_for_writes()
    assert fs.walk_files(bucket) == kept

    with Refusing(gcs_server.url, refusing_delete_of("kept/001")) as proxy:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxy.url)
        fs.delete_tree(f"{bucket}/kept", later=True)
        with pytest.raises(P3DataError) as refused:
            fs.wait_for_writes()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_server.url)
    assert str(refused.value).startswith(f"{kept[1]}: cannot delete it: permission denied")
    assert fs.walk_files(bucket) == [kept[1]]


def test_uploads_sent_in_the_background_are_whole_once_waited_for(gcs_server, bucket):
    files = {f"{bucket}/later/{i:03d}": bytes([i]) * (i * 1000) for i in range(100)}
    with gcs_server.counting() as count:
        fs.write_files(files, later=True)
        assert len(background().sent) <= IN_FLIGHT  # the oldest are waited for first
        fs.wait_for_writes()
    assert not background().sent
    assert sorted(r.method for r in count.requests) == ["POST"] * len(files)
    assert {path: fs.read_bytes(path) for path in fs.walk_files(f"{bucket}/later")} == files


def test_a_refused_background_upload_is_one_line_naming_it_at_the_wait(bucket):
    missing = "gs://no-such-bucket-p3data/later/summary.json"
    fs.write_files({missing: b"{}"}, later=True)
    fs.write_files({f"{bucket}/later/{i}": b"x" for i in range(5)}, later=True)
    with pytest.raises(P3DataError) as refused:
        fs.wait_for_writes()
    assert str(refused.value) == (f"{missing}: cannot write it: no bucket "
                                  "gs://no-such-bucket-p3data")
    assert not background().sent  # every other upload was waited for too
    assert len(fs.walk_files(f"{bucket}/later")) == 5


def test_files_read_together_in_one_round(gcs_server, bucket):
    paths = objects(f"{bucket}/read", 20)
    with gcs_server.counting() as count:
        assert fs.read_files(paths) == [path.encode() for path in paths]
    assert [r.method for r in count.requests] == ["GET"] * len(paths)
    with pytest.raises(FileNotFoundError):
        fs.read_files([*paths, f"{bucket}/read/absent"])
