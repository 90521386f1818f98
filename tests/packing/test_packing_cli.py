"""``squall pack`` through squall.cli.main and through the installed command."""
import json
import os
import subprocess
import sys

import pytest

from squall.cli import main
from squall.idl import encode
from squall.loader import load_topology_file
from squall.packing import pack, plan_from_json, plan_to_json
from squall.packing.request import ALGORITHMS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORD_COUNT = os.path.join(ROOT, "examples", "word_count.py")
SQUALL = os.path.join(os.path.dirname(sys.executable), "squall")


@pytest.fixture
def fresh_file(tmp_path):
    """A copy of word_count.py under a module name of its own: the loader caches
    modules by name and --config-property overrides are recorded on the cached
    topology, so each CLI call gets its own copy."""
    import shutil
    import uuid

    def make():
        name = f"wc_packing_{uuid.uuid4().hex}"
        path = tmp_path / f"{name}.py"
        shutil.copy(WORD_COUNT, path)
        return str(path)

    return make


@pytest.fixture
def run(capsys, fresh_file):
    def _run(*argv):
        code = main(["pack", fresh_file(), *argv])
        out, err = capsys.readouterr()
        return code, out, err

    return _run


def test_default_table(run):
    code, out, err = run()
    assert code == 0, err
    lines = out.splitlines()
    # auto, at least topology.workers=2 containers: dealt in turn as round-robin would
    assert lines[0].startswith("topology 'word_count': auto packing at task granularity, plan word_count-")
    assert lines[1].split() == ["container", "cpu", "ram_mb", "disk_mb", "instances"]
    assert lines[3].split() == ["1", "1.85", "992", "1088", "count", "x1,", "sentence", "x1,", "split", "x1"]
    assert lines[4].split() == ["2", "1.35", "736", "832", "count", "x1,", "split", "x1"]
    assert "requested:    cpu 3.2, ram 1728 MB, disk 1920 MB" in out
    assert "needed:       cpu 2.5, ram 1280 MB, disk 1280 MB" in out
    assert "padding:      cpu 0.7, ram 448 MB, disk 640 MB" in out
    assert "yarn waste:   320 MB, 0.8 vcores (1 shape(s))" in out
    assert "utilisation:  cpu 78.1%, ram 74.1%" in out


def test_json_shape(run):
    code, out, _ = run("--json", "--algorithm", "ffd")
    assert code == 0
    data = json.loads(out)
    assert (data["topology"], data["algorithm"], data["granularity"]) == ("word_count", "ffd", "task")
    (container,) = data["containers"]
    assert container["id"] == 1
    assert container["resources"] == {"cpu": 2.85, "ram_mb": 1504, "disk_mb": 1600}
    assert container["instances"][0] == {
        "component": "count", "task_id": 1, "component_index": 0,
        "resources": {"cpu": 0.5, "ram_mb": 256, "disk_mb": 256},
    }
    assert isinstance(container["resources"]["cpu"], float) and isinstance(container["resources"]["ram_mb"], int)
    assert data["summary"]["containers"] == 1


def test_json_round_trips_every_plan():
    t = load_topology_file(WORD_COUNT).plan
    for algorithm in ALGORITHMS:
        for granularity in ("task", "worker"):
            plan = pack(t, algorithm=algorithm, granularity=granularity)
            data = json.loads(json.dumps(plan_to_json("word_count", plan)))
            name, back = plan_from_json(data)
            assert name == "word_count" and encode(back) == encode(plan)


def test_compare(run):
    code, out, _ = run("--compare", "--config-property", "squall.worker.cpu=1")
    assert code == 0
    rows = {tuple(line.split()[:2]): line for line in out.splitlines()[3:]}
    assert set(rows) == {(a, g) for a in ALGORITHMS for g in ("task", "worker")}
    assert rows[("ffd", "task")].split()[2:5] == ["1", "2.85", "1504"]
    assert rows[("auto", "task")].split()[2:5] == ["2", "3.20", "1728"]  # at least topology.workers=2
    assert rows[("auto", "worker")].split()[2] == "5"
    # 1-cpu workers hold one 0.5-cpu instance each: round-robin over 2 workers cannot
    assert "infeasible: roundrobin: worker 1 would need cpu" in rows[("roundrobin", "worker")]
    assert rows[("ffd", "worker")].split()[2] == "5"
    code, out, _ = run("--compare", "--json")
    data = json.loads(out)
    assert len(data["compare"]) == 8 and all(e["feasible"] for e in data["compare"])


@pytest.mark.parametrize("argv, message", [
    (["--algorithm", "bestfit"], "squall: error: unknown algorithm 'bestfit' (squall.packing.algorithm): expected one of auto, roundrobin, rcrr, ffd"),
    (["--granularity", "slot"], "squall: error: unknown granularity 'slot' (squall.packing.granularity)"),
    (["--config-property", "topology.workers=0"], "squall: error: topology.workers (--config-property): must be >= 1, got 0"),
    (["--config-property", "topology.workers=6"], "squall: error: topology.workers=6 is more than the topology's 5 tasks"),
    (["--config-property", "squall.component.ram.mb=20000"], "squall: error: component 'count': one instance needs ram 20000 MB"),
    (["--config-property", "squall.packing.algorithm=nope"], "squall: error: squall.packing.algorithm (--config-property): expected one of auto, roundrobin, rcrr, ffd, got 'nope'"),
])
def test_impossible_requests_exit_2_with_one_line(run, argv, message):
    code, out, err = run(*argv)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(message)


@pytest.mark.parametrize("argv", [["--algorithm", "rcrr"], ["--config-property", "topology.workers=null"]])
def test_installed_command_is_deterministic_across_hash_seeds(argv):
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([SQUALL, "pack", WORD_COUNT, "--json", *argv],
                              capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
    proc = subprocess.run([SQUALL, "pack", WORD_COUNT, "--algorithm", "nope"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "'nope'" in proc.stderr
