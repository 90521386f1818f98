"""Files shipped at submit reach every task of a YARN application run as YARN and Skein would run its spec
(tests/yarn/emulator.py): each task reads the copy YARN localised in its own container's working folder."""
import glob
import json
import os

from squall.state import Kind, open_state_manager

from e2e_harness import TOPOLOGIES, wait_until
from emulator import EmulatedApplication, group_alive
from test_emulated import yarn_cluster  # noqa: F401  (the fixture)


def test_every_task_reads_the_file_yarn_localised_in_its_container(yarn_cluster, tmp_path):  # noqa: F811
    squall, config, apps = yarn_cluster
    out = tmp_path / "out"
    out.mkdir()
    table = tmp_path / "table.txt"
    table.write_text("alpha=one\nbeta=two\ngamma=three\ndelta=four\n")
    spec = tmp_path / "lookup.yaml"
    squall("submit", os.path.join(TOPOLOGIES, "lookup_files.py"), "--cluster", "yarn", "--spec-out", str(spec),
           "--files", f"{table}#lookup", "--config-property", f"e2e.out.dir={out}",
           "--config-property", "topology.workers=2")
    app = EmulatedApplication(str(spec), str(tmp_path / "yarn"))
    apps.append(app)
    app.start()
    with open_state_manager(config) as state:
        plan = state.get(Kind.PACKING_PLAN, "lookup_files")
        tasks = {i.id.task_id for c in plan.containers for i in c.instances}

        def read():
            found = {}
            for path in glob.glob(os.path.join(out, "read-*.json")):
                with open(path) as f:
                    found[int(os.path.basename(path)[len("read-"):-len(".json")])] = json.load(f)
            return found
        wait_until(lambda: set(read()) == tasks, timeout=60, what="every task to read the shipped file")
        workdirs = {os.path.join(c.workdir, "") for c in app.containers}
        for task, got in read().items():
            assert got["text"] == table.read_text()
            assert got["path"].endswith(os.path.join("", "shipped", "lookup", "1", "table.txt"))
            assert any(got["path"].startswith(w) for w in workdirs), f"task {task} read {got['path']}"
    squall("kill", "lookup_files")
    wait_until(app.finished, timeout=60, what="every container and the driver to exit")
    # a container's shell exits first; what it started may still be on its way out (as in test_emulated.py)
    wait_until(lambda: not [c.yarn_id for c in app.containers if group_alive(c.popen)], timeout=30,
               what="every process of every container to exit")
