"""A process's shipped files without sockets: versions fetched into a container's folder and checked, records
handed from the state watch to the loop, the task's context and ``on_file_update``."""
import hashlib
import os

import pytest

from squall import Bolt
from squall.component import TopologyContext
from squall.idl import schema
from squall.runtime.instance import make_instance
from squall.runtime.shipped_files import FileCache, FilesInForce
from squall.state import StorageError
from squall.state.shipped_files import stored_uri
from squall.state.storage import LocalStorage

from test_instance_events import TOPOLOGY, plan_frame


def store(storage, alias, version, data, name="table.txt"):
    """Version ``version`` of ``alias`` written into ``storage`` (as an update stores it); its record entry."""
    entry = schema.ShippedFile(key=alias, version=version, name=name, size=len(data),
                               sha256=hashlib.sha256(data).hexdigest())
    storage.write(f"{alias}/{version}/{name}", data)
    entry.stored = stored_uri(storage, entry)
    return entry


@pytest.fixture
def stored(tmp_path):
    return LocalStorage(str(tmp_path / "shared"))


@pytest.fixture
def cache(tmp_path):
    return FileCache(str(tmp_path / "container" / "files"), str(tmp_path / "container" / "shipped"))


def test_a_version_is_fetched_into_the_container_folder_once(stored, cache):
    entry = store(stored, "lookup", 2, b"alpha=one\n")
    path = cache.path_of(entry)
    assert path == os.path.join(cache.folder, "lookup", "2", "table.txt")
    assert open(path, "rb").read() == b"alpha=one\n"
    stored.delete("lookup")
    assert cache.path_of(entry) == path, "a version already in the folder is fetched again"


def test_a_damaged_version_is_refused(stored, cache):
    entry = store(stored, "lookup", 2, b"alpha=one\n")
    stored.write("lookup/2/table.txt", b"alpha=0ne\n")
    with pytest.raises(StorageError, match="shipped file 'lookup' version 2 from file://.*: 10 bytes with SHA-256 "):
        cache.path_of(entry)
    assert not os.path.exists(os.path.join(cache.folder, "lookup", "2"))


def test_a_localised_version_is_read_where_the_scheduler_put_it(cache):
    entry = schema.ShippedFile(key="lookup", version=1, name="t.txt", size=3, sha256="x")
    LocalStorage(cache.localised).write("lookup/1/t.txt", b"abc")
    assert cache.path_of(entry) == os.path.join(cache.localised, "lookup", "1", "t.txt")
    assert not os.path.exists(cache.folder), "a localised version was copied"


def test_a_version_the_scheduler_should_have_localised_is_named(cache):
    entry = schema.ShippedFile(key="lookup", version=1, name="t.txt", size=3, sha256="x")
    with pytest.raises(StorageError, match="shipped file 'lookup' version 1: not at .*/lookup/1/t.txt, where the "
                                           "scheduler should have localised it"):
        cache.path_of(entry)


def test_records_are_taken_on_the_loop_newest_first_and_old_versions_cleaned(stored, cache):
    files = FilesInForce(cache)
    v = {n: store(stored, "lookup", n, f"v{n}".encode()) for n in (1, 2, 3)}
    other = store(stored, "model", 1, b"m")
    assert files.apply(schema.ShippedFiles(files=[v[1], other])) == [
        ("lookup", cache.path_of(v[1])), ("model", cache.path_of(other))]
    assert files.take() == []
    files.on_record(schema.ShippedFiles(files=[v[2], other]))  # the state watch's thread
    files.on_record(schema.ShippedFiles(files=[v[3], other]))
    files.on_record(None)  # the record removed (kill): nothing to switch to
    assert files.take() == [("lookup", os.path.join(cache.folder, "lookup", "3", "table.txt"))]
    assert files.paths == {"lookup": cache.path_of(v[3]), "model": cache.path_of(other)}
    assert sorted(os.listdir(os.path.join(cache.folder, "lookup"))) == ["3"]  # 2 was never fetched here
    assert files.take() == []


def test_a_version_that_cannot_be_fetched_keeps_the_one_in_force(stored, cache):
    files = FilesInForce(cache)
    v1 = store(stored, "lookup", 1, b"v1")
    files.apply(schema.ShippedFiles(files=[v1]))
    lost = store(stored, "lookup", 2, b"v2")
    stored.delete("lookup/2")
    files.on_record(schema.ShippedFiles(files=[lost]))
    assert files.take() == []
    assert files.paths == {"lookup": cache.path_of(v1)}
    with pytest.raises(StorageError):  # at start there is no version to keep: the task cannot run
        FilesInForce(FileCache(cache.folder + "-2", cache.localised)).apply(schema.ShippedFiles(files=[lost]))


def test_get_file_of_an_unknown_alias_names_the_shipped_ones():
    context = TopologyContext("wc", 3, "count", {"count": [3]}, {}, files={"lookup": "/x", "model": "/y"})
    assert context.get_file("model") == "/y"
    with pytest.raises(KeyError, match=r"topology 'wc' has no shipped file 'lookpu' \(shipped: lookup, model; "
                                       r"squall submit --files PATH#ALIAS ships one\)"):
        context.get_file("lookpu")
    with pytest.raises(KeyError, match=r"no shipped file 'lookup' \(it ships none;"):
        TopologyContext("wc", 3, "count", {"count": [3]}, {}).get_file("lookup")


class Reloading(Bolt):
    def __init__(self, fail=False):
        self.calls, self.fail = [], fail

    def initialize(self, config, context):
        self.context = context

    def on_file_update(self, alias, path):
        self.calls.append((alias, path, self.context.get_file(alias)))
        if self.fail:
            raise ValueError("bad table")


def test_the_task_reads_the_paths_the_loop_switches_and_is_told():
    component = Reloading()
    inst = make_instance(TOPOLOGY, "sink", 9, 1, None, component_obj=component)
    paths = {"lookup": "/v1"}
    inst.files = paths
    inst.on_file_update("lookup", "/v0")  # before initialize: nothing to tell
    inst.on_frame(plan_frame(1), 0.0)
    assert component.context.get_file("lookup") == "/v1"
    paths["lookup"] = "/v2"  # what the loop does before it tells the task
    inst.on_file_update("lookup", "/v2")
    assert component.calls == [("lookup", "/v2", "/v2")]


def test_an_error_in_on_file_update_is_the_tasks_and_it_goes_on():
    inst = make_instance(TOPOLOGY, "sink", 9, 1, None, component_obj=Reloading(fail=True))
    inst.files = {"lookup": "/v2"}
    inst.on_frame(plan_frame(1), 0.0)
    inst.on_file_update("lookup", "/v2")
    assert inst.errors.count == 1 and inst.errors.kept[0]["where"] == "on_file_update()"
    assert "ValueError: bad table" in inst.errors.kept[0]["error"]
