"""A container's debug server (runtime/debug_server.py) on loopback, over real HTTP, looking inside a real
process that installed the debug handlers (runtime/debug_agent.py) and is busy in a named function: the secret
required, its stacks, a flame graph and its allocations, the kept results and nothing else served, its log
folder searched, and every refusal in one line."""
import json
import os
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET

import pytest

from squall.runtime.debug_server import DebugServer, ServerSettings
from squall.runtime import profiles
from squall.runtime.profiles import Target
from squall.testing import wait_until

SECRET = "s3cret"
CHILD = textwrap.dedent("""
    import sys, time
    from squall.runtime.debug_agent import DebugAgent

    def busy_in_a_named_function(kept):
        while True:
            kept.append(str(time.monotonic()) * 32)
            del kept[:-1000]

    DebugAgent(sys.argv[1]).install()
    busy_in_a_named_function([])
""")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("debug-server")
    debug_dir, log_dir = str(tmp_path / "debug"), str(tmp_path / "logs")
    os.makedirs(log_dir)
    with open(os.path.join(log_dir, "instance-7-spin.log"), "w") as f:
        f.write("2026-11-26 10:00:00,000 INFO spin: marker seven\n")
    child = subprocess.Popen([sys.executable, "-c", CHILD, debug_dir])
    server = DebugServer("127.0.0.1", ServerSettings(container=1, host="127.0.0.1", secret=SECRET, log_dir=log_dir,
                                                     debug_dir=debug_dir, max_matches=10, profiler="sampler",
                                                     interval=0.01, max_secs=5))
    target = Target("instance-7-spin", child.pid, debug_dir)
    server.tasks = {7: target, 8: Target("instance-8-spin", 0, debug_dir)}
    server.start()
    wait_until(target.ready, timeout=15, what="the child's debug handlers")
    yield server
    server.close()
    child.kill()
    child.wait()


def ask(server, method, path, body=None, secret=SECRET):
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://{server.address}{path}", data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            raw, kind = reply.read(), reply.headers["Content-Type"]
            return reply.status, json.loads(raw) if kind == "application/json" else raw
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_stacks_profiles_and_results_of_a_process_through_its_handlers(server):
    status, stacks = ask(server, "POST", "/stacks", {"task": 7})
    assert status == 200 and stacks["process"] == "instance-7-spin"
    assert 'in busy_in_a_named_function' in stacks["text"] and stacks["text"].startswith("Current thread")

    status, flame = ask(server, "POST", "/profile", {"task": 7, "kind": "flame", "seconds": 0.5})
    assert status == 200 and (flame["profiler"], flame["unit"]) == ("sampler", "cpu ms") and flame["total"] > 0
    svg = ET.parse(flame["path"]).getroot()
    assert any(t.text.startswith("busy_in_a_named_function (<string>)") for t in svg.iter(
        "{http://www.w3.org/2000/svg}title"))

    status, memory = ask(server, "POST", "/profile", {"task": 7, "kind": "memory", "seconds": 0.5})
    assert status == 200 and memory["allocations"]
    assert any(a["file"] == "<string>" and a["line"] == 7 for a in memory["allocations"])

    status, kept = ask(server, "GET", "/results")
    names = [r["name"] for r in kept["results"]]
    assert sorted(r["kind"] for r in kept["results"]) == ["flame", "memory", "stacks"]
    assert all(n.startswith(f"{r['kind']}-instance-7-spin-") for n, r in zip(names, kept["results"]))
    flame_name = os.path.basename(flame["path"])
    status, data = ask(server, "GET", f"/result?name={flame_name}")
    assert status == 200 and data == open(flame["path"], "rb").read()


def test_log_search_of_its_own_folder(server):
    status, found = ask(server, "GET", "/logs/search?grep=marker%20s.ven")
    assert status == 200 and [(os.path.basename(m["file"]), m["line"]) for m in found["matches"]] == [
        ("instance-7-spin.log", 1)]
    assert (found["container"], found["total"], found["truncated"]) == (1, 1, False)


def test_refusals_are_one_line_each(server):
    assert ask(server, "GET", "/results", secret=None) == (
        401, {"error": "send the topology's secret: Authorization: Bearer <secret>"})
    assert ask(server, "GET", "/results", secret="other") == (403, {"error": "wrong secret: not this topology's"})
    assert ask(server, "POST", "/stacks", {"task": 9}) == (
        404, {"error": "container 1 runs no task 9 (its tasks: 7, 8)"})
    assert ask(server, "POST", "/stacks", {"task": 8}) == (
        409, {"error": "task 8 (instance-8-spin) is not running (restarting, or past its restart budget)"})
    assert ask(server, "POST", "/profile", {"task": 7, "kind": "flame", "seconds": 60}) == (
        400, {"error": "seconds 60: more than 0 and at most 5 (squall.debug.profile.max.secs)"})
    assert ask(server, "GET", "/logs/search?grep=(") == (
        400, {"error": "--grep '(' is not a regular expression: missing ), unterminated subpattern at position 0"})
    assert ask(server, "GET", "/result?name=../../etc/passwd") == (
        404, {"error": "container 1 keeps no result named '../../etc/passwd'"})
    assert ask(server, "GET", "/nowhere")[0] == 404


@pytest.mark.skipif(not profiles.py_spy_usable(), reason="py-spy is not installed beside this Python, or Yama's "
                                                         "ptrace_scope keeps it from tracing a sibling")
def test_py_spy_draws_the_flame_graph_where_it_may_trace(server):
    done = profiles.flame(server.tasks[7], 1.0, 0.01, "py-spy")
    assert done["profiler"] == "py-spy"
    with open(done["path"]) as f:
        assert "busy_in_a_named_function" in f.read()


def test_the_container_s_sampled_emits_are_served_where_they_are(server):
    """``squall events`` asks each container's server: its events log and rotated copies, filtered, newest N."""
    log_dir = server.settings.log_dir
    rows = [{"time": t, "component": c, "task": 7, "stream": "default", "id": None, "values": [t]}
            for t, c in ((1.0, "spin"), (2.0, "other"), (3.0, "spin"))]
    with open(os.path.join(log_dir, "events.log.1"), "w") as f:
        f.write(json.dumps(rows[0]) + "\n")
    with open(os.path.join(log_dir, "events.log"), "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows[1:]))
    status, answer = ask(server, "GET", "/events?component=spin")
    assert status == 200 and [e["time"] for e in answer["events"]] == [1.0, 3.0] and answer["container"] == 1
    assert [e["time"] for e in ask(server, "GET", "/events?limit=1")[1]["events"]] == [3.0]
    assert [e["time"] for e in ask(server, "GET", "/events?since=1.5")[1]["events"]] == [2.0, 3.0]
    assert ask(server, "GET", "/events?since=soon")[0] == 400
