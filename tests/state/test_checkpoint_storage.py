"""Checkpoint storage behind one interface: the local directory for real, HDFS where a cluster is configured."""
import os

import pytest

from squall.state import StateError
from squall.state.storage import (ArrowStorage, LocalStorage, checkpoint_dir, checkpoint_ids, open_storage,
                                  saved_tasks, task_file)

HDFS = os.environ.get("SQUALL_TEST_HDFS")  # hdfs://namenode:port/some/scratch/path


@pytest.fixture(params=["local", "arrow", "hdfs"])
def storage(request, tmp_path):
    if request.param == "local":
        return LocalStorage(str(tmp_path / "ckpt"))
    if request.param == "arrow":
        # the HDFS code over pyarrow's local filesystem: the same pyarrow.fs interface as HadoopFileSystem
        # (on HDFS a rename is atomic as here; only the connection to a namenode differs)
        fs = pytest.importorskip("pyarrow.fs")
        return ArrowStorage(fs.LocalFileSystem(), str(tmp_path / "arrow"), f"file://{tmp_path}/arrow")
    if not HDFS:
        pytest.skip("no HDFS here: set SQUALL_TEST_HDFS=hdfs://namenode:port/scratch to run against a cluster "
                    "(needs pyarrow and libhdfs, as on a YARN node)")
    store = ArrowStorage.hdfs(HDFS)
    store.delete("t")
    return store


def test_files_are_written_whole_read_listed_and_deleted(storage):
    storage.write(task_file("t", 3, "count", 0, 2), b"zero")
    storage.write(task_file("t", 3, "count", 1, 2), b"one")
    storage.write(task_file("t", 3, "count", 1, 2), b"one again")  # replaces
    storage.write(task_file("t", 4, "count", 0, 1), b"four")
    assert storage.read(task_file("t", 3, "count", 1, 2)) == b"one again"
    assert saved_tasks(storage, "t", 3, "count") == [(0, 2, "t/3/count/task-0-of-2"), (1, 2, "t/3/count/task-1-of-2")]
    assert checkpoint_ids(storage, "t") == [3, 4]
    storage.delete(checkpoint_dir("t", 3))
    assert checkpoint_ids(storage, "t") == [4] and saved_tasks(storage, "t", 3, "count") == []
    assert storage.list("never/written") == []
    storage.delete("never/written")  # nothing to delete: no error
    with pytest.raises(StateError, match="cannot read checkpoint file"):
        storage.read("t/9/count/task-0-of-1")


def test_a_local_write_never_leaves_a_partial_file_behind(tmp_path):
    storage = LocalStorage(str(tmp_path))
    storage.write("t/1/c/task-0-of-1", b"good")
    with pytest.raises(TypeError):
        storage.write("t/1/c/task-0-of-1", object())  # fails mid-write
    assert storage.read("t/1/c/task-0-of-1") == b"good"
    assert os.listdir(tmp_path / "t" / "1" / "c") == ["task-0-of-1"]


def test_a_path_cannot_leave_the_storage_root(tmp_path):
    with pytest.raises(StateError, match="leaves the storage root"):
        LocalStorage(str(tmp_path / "root")).write("../outside", b"x")


def test_the_setting_names_the_storage(tmp_path):
    assert open_storage("", str(tmp_path)).root == str(tmp_path / "checkpoints")
    assert open_storage(str(tmp_path / "a"), None).root == str(tmp_path / "a")
    assert open_storage(f"file://{tmp_path}/b", None).root == str(tmp_path / "b")
    with pytest.raises(StateError, match=r"unknown scheme 's3'"):
        open_storage("s3://bucket/x", None)
    with pytest.raises(StateError, match="no run folder"):
        open_storage("", None)
