"""squall logs --grep and squall profile against a running topology on the local cluster: every container's
debug server searches its own logs and looks inside its tasks' processes (a chained task: its chain's). One
run of inspect_spin (two containers, one chain each, every spin task busy in spin_in_named_function)
serves every assertion; then the stopped run's folder is searched on disk."""
import json
import os
import xml.etree.ElementTree as ET

from e2e_harness import wait_until

from squall.state import Kind

MARKER = "inspect marker from task"


def spin_tasks(cluster):
    """{task: container} of the spin component."""
    with cluster.state() as state:
        plan = state.get(Kind.PACKING_PLAN, "inspect_spin")
    return {i.id.task_id: c.id for c in plan.containers for i in c.instances if i.id.component == "spin"}


def test_logs_grep_and_profiles_of_tasks_in_two_containers(cluster):
    cluster.submit("inspect_spin", "topology.workers=2", "squall.debug.profiler=sampler")
    tasks = spin_tasks(cluster)
    assert sorted(tasks.values()) == [1, 2]

    def markers():
        out, _ = cluster.squall("logs", "inspect_spin", "--grep", MARKER + r" \d+", "--json")
        found = json.loads(out)
        return found if len(found["matches"]) == 2 else None

    found = wait_until(markers, timeout=30, what="a marker line from the spin task of each container")
    assert {(m["container"], m["text"].rpartition(" ")[2]) for m in found["matches"]} == {
        (c, str(t)) for t, c in tasks.items()}
    assert found["matches"][0]["time"] >= found["matches"][1]["time"]  # newest first
    for m in found["matches"]:  # the file and line named hold the line
        with open(m["file"]) as f:
            assert f.read().splitlines()[m["line"] - 1] == m["text"]
    text, _ = cluster.squall("logs", "inspect_spin", "--grep", MARKER, "--component", "spin", "--since", "1h")
    assert sorted(line.partition(" ")[0] for line in text.splitlines()) == ["c1", "c2"]
    assert all("-spin.log:" in line and MARKER in line for line in text.splitlines())
    _, err = cluster.squall("logs", "inspect_spin", "--grep", MARKER, "--since", "2099-01-01")
    assert err == ""

    task = min(tasks)
    out, _ = cluster.squall("profile", "inspect_spin", "--task", str(task), "--stacks")
    first = out.splitlines()[0]
    assert first.startswith(f"stacks of task {task} (instance-") and f"+{task}-spin, pid" in first  # its chain's
    assert "in spin_in_named_function" in out

    out, _ = cluster.squall("profile", "inspect_spin", "--task", str(task), "--flame", "1")
    path = out.splitlines()[-1]
    assert os.path.dirname(path) == os.path.join(cluster.run_dir("inspect_spin"), "debug",
                                                 f"container-{tasks[task]}")
    frames = [t.text for t in ET.parse(path).getroot().iter("{http://www.w3.org/2000/svg}title")]
    assert any(f.startswith("spin_in_named_function (inspect_spin.py) - ") for f in frames)

    out, _ = cluster.squall("profile", "inspect_spin", "--task", str(task), "--memory", "0.5")
    assert 'inspect_spin.py:20  kept.append(f"spin {time.monotonic()}" * 64)' in out

    # bad input: one line each, exit 2
    for argv, line in [
        (["logs", "inspect_spin", "--grep", "("],
         "--grep '(' is not a regular expression: missing ), unterminated subpattern at position 0"),
        (["logs", "inspect_spin", "--grep", "x", "--component", "nosuch"],
         "topology 'inspect_spin' has no component 'nosuch' (components: numbers, spin)"),
        (["logs", "inspect_spin", "--grep", "x", "--since", "soon"],
         "--since 'soon': give a duration (90s, 10m, 2h, 1d) or a local time (2026-11-26T15:04:05, "
         "2026-11-26 15:04, 2026-11-26)"),
        (["profile", "inspect_spin", "--task", "99", "--stacks"],
         "topology 'inspect_spin' has no task 99 (its tasks: 1-4)"),
        (["profile", "nosuch", "--task", "1", "--stacks"],
         "no topology named 'nosuch' is running (running: inspect_spin)"),
    ]:
        out, err = cluster.squall(*argv, expect=2)
        assert (out, err) == ("", f"squall: error: {line}\n")

    cluster.squall("kill", "inspect_spin")
    out, _ = cluster.squall("logs", "inspect_spin", "--grep", MARKER)  # the stopped run's folder, on disk
    assert sorted(line.partition(" ")[0] for line in out.splitlines()) == ["c1", "c2"]
