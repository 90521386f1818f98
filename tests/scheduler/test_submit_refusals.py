"""Submit refuses bad requests before anything is written or started."""
import os

import psutil
import pytest

from squall.cli import main

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORD_COUNT = os.path.join(REPO, "examples", "word_count.py")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SQUALL_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def executors():
    return [p for p in psutil.process_iter(["cmdline"]) if "squall.runtime.executor" in " ".join(p.info["cmdline"] or [])]


@pytest.mark.parametrize("prop,message", [
    ("topology.workers=100", "topology.workers"),
    ("squall.packing.algorithm=best", "squall.packing.algorithm"),
    ("squall.component.cpu=64", "squall.container.max.cpu"),
])
def test_impossible_requests_launch_nothing(home, capsys, prop, message):
    before = executors()
    code = main(["submit", WORD_COUNT, "--config-property", prop])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert err.startswith("squall: error: ") and message in err and err.count("\n") == 1
    assert executors() == before
    assert not os.path.exists(home / "topologies")
    state = home / "state"
    assert not state.exists() or all(not os.listdir(state / d) for d in os.listdir(state))


def test_unknown_cluster_is_refused(home, capsys):
    code = main(["submit", WORD_COUNT, "--cluster", "mars"])
    _, err = capsys.readouterr()
    assert code == 2 and err == "squall: error: --cluster 'mars': unknown cluster (available: local, yarn)\n"


def test_bad_name_is_refused(home, capsys):
    code = main(["submit", WORD_COUNT, "--name", "../escape"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err == ("squall: error: --name '../escape': use letters, digits, '_', '.' and '-', "
                   "starting with a letter or digit\n")
    assert not os.path.exists(home / "topologies")
