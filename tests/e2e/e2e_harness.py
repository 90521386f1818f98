"""A local Squall cluster for end-to-end tests: real executors, processes and sockets.

Each test gets its own ``SQUALL_HOME``; whatever a test leaves running is
killed afterwards and reported as a failure.
"""
import glob
import json
import os
import uuid
from collections import Counter

import psutil
import pytest

from squall.cli import main
from squall.testing import wait_until  # noqa: F401  (the one wait helper; tests import it from here too)
from squall.testing.processes import processes_under
from squall.testing.words import set_rate

TOPOLOGIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "topologies")


class LocalCluster:
    """The embedded default: the local scheduler and the local state manager under ``home``."""

    def __init__(self, home, capsys):
        self.home = str(home)
        self.capsys = capsys

    def command_options(self):
        return []

    def state(self):
        from squall.state import LocalStateManager

        return LocalStateManager(os.path.join(self.home, "state"))

    def squall(self, *argv, expect=0):
        code = main(list(argv) + self.command_options())
        out, err = self.capsys.readouterr()
        assert code == expect, f"squall {' '.join(argv)} exited {code}:\n{out}\n{err}"
        return out, err

    def submit(self, name, *props):
        args = ["submit", os.path.join(TOPOLOGIES, f"{name}.py")]
        for p in props:
            args += ["--config-property", p]
        return self.squall(*args)

    def processes(self):
        """Live processes that belong to this cluster (their command names a file of its home)."""
        return processes_under(self.home)

    def run_dir(self, topology):
        runs = sorted(glob.glob(os.path.join(self.home, "topologies", topology, "*")))
        return runs[-1]


def read_counts(out_dir, prefix="count-"):
    """Per-task counters written by test bolts (``<prefix><task>.json``)."""
    per_task = {}
    for path in glob.glob(os.path.join(out_dir, f"{prefix}*.json")):
        task = int(os.path.basename(path)[len(prefix):-len(".json")])
        with open(path) as f:
            per_task[task] = Counter(json.load(f))
    return per_task


def summed_counts(out_dir):
    """Word counts summed over every ``count-*.json`` file (any task, any process)."""
    total = Counter()
    for path in glob.glob(os.path.join(out_dir, "count-*.json")):
        with open(path) as f:
            total.update(json.load(f))
    return total


def pace(out_dir, per_sec):
    """wc_update's spout emits ``per_sec`` sentences a second from now on (its ``rate`` file, read every 0.2 s):
    a test speeds up the rest of the corpus once what it disturbs mid-run is over."""
    set_rate(os.path.join(out_dir, "rate"), per_sec)


def records_left(state, name):
    """The kinds of state record ``name`` still has (none once it is killed or cleaned up)."""
    from squall.state import Kind

    return [k.value for k in Kind if (state.members(k, name) if k.grouped else state.get(k, name) is not None)]


class ZooKeeperCluster(LocalCluster):
    """The local scheduler with its state in ZooKeeper, as an operator's cluster file sets it:
    every command gets ``--config-path``; runtime processes find the state from the run's state file."""

    AUTH = "squall:e2e-credential"

    def __init__(self, home, capsys, zookeeper, config_dir):
        super().__init__(home, capsys)
        self.hosts = zookeeper.hosts
        self.root = f"/squall-{uuid.uuid4().hex[:8]}"
        self.config_path = os.path.join(str(config_dir), "cluster.yaml")
        with open(self.config_path, "w") as f:
            f.write(f"squall.state.manager: zookeeper\nsquall.state.zookeeper.connect: '{self.hosts}'\n"
                    f"squall.state.root: '{self.root}'\nsquall.state.zookeeper.auth: '{self.AUTH}'\n"
                    "squall.state.zookeeper.session.timeout.secs: 4\n")

    def command_options(self):
        return ["--config-path", self.config_path]

    def state(self):
        from squall.state import open_state_manager

        return open_state_manager(self.config_path)


def _cluster(c):
    yield c
    leftovers = c.processes()
    for p in leftovers:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    assert not leftovers, f"processes left running: {[p.info['cmdline'] for p in leftovers]}"


@pytest.fixture
def cluster(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("SQUALL_HOME", str(home))
    yield from _cluster(LocalCluster(home, capsys))


@pytest.fixture
def zk_cluster(tmp_path, monkeypatch, capsys, zookeeper):
    home = tmp_path / "home"
    monkeypatch.setenv("SQUALL_HOME", str(home))
    yield from _cluster(ZooKeeperCluster(home, capsys, zookeeper, tmp_path))
