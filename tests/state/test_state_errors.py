"""The state layer's boundary: no kazoo exception and no raw OSError leaves it, every failure is a
StateError naming the resource (the znode, the checkpoint file) and the operation."""
import os
import stat

import pytest

from squall.idl import schema
from squall.state import Kind, StateError, StorageError
from squall.state.storage import ArrowStorage, LocalStorage, task_file
from squall.state.zkserver import ZooKeeperServer
from squall.state.zookeeper import ZooKeeperStateManager
from squall.testing import wait_until

from state_helpers import AUTH


@pytest.fixture
def own_zookeeper():
    """A server of this test alone: it is stopped under its client."""
    server = ZooKeeperServer()
    server.start()
    yield server
    server.close()


def test_a_stopped_zookeeper_is_a_state_error_naming_the_znode(own_zookeeper):
    state = ZooKeeperStateManager(own_zookeeper.hosts, "/errors", connect_timeout=1.5, session_timeout=2.0,
                                  auth=AUTH)
    state.start()
    try:
        location = schema.TMasterLocation(topology_name="t", host="h", control_port=1, pid=2, run_id="r")
        state.put(Kind.TMASTER, "t", location)
        assert state.get(Kind.TMASTER, "t") == location
        own_zookeeper.stop()
        with pytest.raises(StateError, match=r"ZooKeeper at 127\.0\.0\.1:\d+: get /errors/tmasters/t "):
            state.get(Kind.TMASTER, "t")
        with pytest.raises(StateError, match=r"set /errors/pplans/t "):
            state.put(Kind.PHYSICAL_PLAN, "t", schema.PhysicalPlan(topology_name="t", packing_plan_id="p", status=1,
                                                                  tmaster=None, stmgrs=[], instances=[]))
        with pytest.raises(StateError, match=r"get_children /errors/containers/t"):
            state.members(Kind.CONTAINER, "t")
        wait_until(lambda: state.session.value != "connected", 30, "kazoo to see the connection go")
        with pytest.raises(StateError, match=r"cannot watch /errors/tmasters/t"):
            state.watch(Kind.TMASTER, "t", lambda record: None)
    finally:
        state.close()


def test_a_checkpoint_folder_under_a_regular_file_is_a_storage_error_naming_it(tmp_path):
    (tmp_path / "plain").write_text("not a folder")
    storage = LocalStorage(str(tmp_path / "plain" / "ckpt"))
    path = task_file("t", 1, "count", 0, 1)
    with pytest.raises(StorageError, match=f"cannot write checkpoint file {tmp_path}/plain/ckpt/{path}: Not a directory"):
        storage.write(path, b"state")
    with pytest.raises(StorageError, match=f"cannot list checkpoint folder {tmp_path}/plain/ckpt/t"):
        storage.list("t")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_checkpoint_folder_is_a_storage_error_naming_it(tmp_path):
    root = tmp_path / "ckpt"
    root.mkdir()
    root.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        storage = LocalStorage(str(root))
        with pytest.raises(StorageError, match=f"cannot write checkpoint file {root}/t/1/c/task-0-of-1: "
                                               "Permission denied"):
            storage.write("t/1/c/task-0-of-1", b"state")
    finally:
        root.chmod(stat.S_IRWXU)


def test_an_unwritable_arrow_storage_is_a_storage_error_naming_it(tmp_path):
    fs = pytest.importorskip("pyarrow.fs")
    (tmp_path / "plain").write_text("not a folder")
    storage = ArrowStorage(fs.LocalFileSystem(), str(tmp_path / "plain" / "ckpt"), f"file://{tmp_path}/plain/ckpt")
    with pytest.raises(StorageError, match=f"cannot write checkpoint file file://{tmp_path}/plain/ckpt/t/1/c/task-0-of-1"):
        storage.write("t/1/c/task-0-of-1", b"state")
