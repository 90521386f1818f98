"""The REST API over real HTTP, against ui_words running on the local cluster (tests/ui/conftest.py)."""
import json
import os

from ui_harness import wait_until

TOPOLOGY = "/api/v1/topology/ui_words"


def cli_error(local, *argv):
    """The one line ``squall`` prints for a user error (exit 2), without its prefix."""
    err = local.run(*argv, expect=2).stderr.strip()
    assert err.startswith("squall: error: ") and "\n" not in err, err
    return err[len("squall: error: "):]


def test_summaries_list_the_topology_with_its_status_and_size(local):
    rows = local.get("/api/v1/topology/summary")["topologies"]
    assert [(r["name"], r["status"], r["containers"], r["instances"], r["cluster"]) for r in rows] == \
        [("ui_words", "RUNNING", 2, 5, "local")]
    assert rows[0]["reasons"] == [] and rows[0]["uptime_secs"] > 0
    cluster = local.get("/api/v1/cluster/summary")
    assert [t["name"] for t in cluster["topologies"]] == ["ui_words"]
    assert cluster["containers"] == 3 and cluster["instances"] == 5 and cluster["yarn"] is None


def test_topology_gives_plan_config_status_and_windowed_figures(local):
    def figures():
        t = local.get(f"{TOPOLOGY}?window=60s")
        m = {c["name"]: c["metrics"] for c in t["components"]}
        charted = len(t["series"].get("count", [])) >= 2
        return t if all(m.values()) and m["count"]["executed"] > 0 and t["errors"] and charted else None
    t = wait_until(figures, timeout=60, what="figures of every component, an error and two steps of a chart")
    assert t["status"] == "RUNNING" and t["window"] == "60s" and t["confirmed_status"] == "RUNNING"
    assert [(c["name"], c["kind"], c["parallelism"], c["instances"]) for c in t["components"]] == \
        [("sentences", "spout", 1, 1), ("split", "bolt", 2, 2), ("count", "bolt", 2, 2)]
    assert t["components"][2]["inputs"] == [{"component": "split", "stream": "default", "grouping": "fields",
                                            "fields": ["word"]}]
    assert t["config"]["topology.reliability.mode"] == "ATLEAST_ONCE"
    assert t["checkpoints"] is None  # no stateful component: no checkpoints (docs/state.md)
    count = t["components"][2]["metrics"]
    for key in ("execute_rate", "execute_latency_p50_ms", "execute_latency_p99_ms", "capacity", "cpu_percent",
                "rss_mb", "queue_depth", "backpressure_ms", "process_latency_p99_ms"):
        assert count[key] is not None, key
    assert 0 <= count["capacity"] < 1 and count["rss_mb"] > 5 and count["window_secs"] <= 61
    assert count["execute_latency_p50_ms"] <= count["execute_latency_p99_ms"]
    assert t["components"][0]["metrics"]["complete_latency_p99_ms"] > 0  # at least once: trees complete
    assert set(t["series"]) == {"sentences", "split", "count"}
    everything = local.get(f"{TOPOLOGY}?window=all")["components"][2]["metrics"]
    assert everything["executed"] >= count["executed"] and everything["execute_latency_p99_ms"] is None
    assert local.get(f"{TOPOLOGY}?window=600")["window"] == "10m"
    assert local.get(f"{TOPOLOGY}?window=2h", expect=400)["error"].startswith("window '2h': expected one of")


def test_errors_in_user_code_are_kept_with_time_and_traceback_and_in_squall_show(local):
    errors = local.get(f"{TOPOLOGY}?window=60s")["errors"]
    boom = [e for e in errors if e["component"] == "count"]
    assert boom and all(e["error"] == "ValueError: cannot count 'boom'" for e in boom)
    assert all(e["where"] == "process(): the tuple failed" for e in boom)
    assert "ui_words.py" in boom[-1]["traceback"] and "in process" in boom[-1]["traceback"]
    shown = json.loads(local.run("show", "ui_words", "--json").stdout)["errors"]
    assert shown and {e["error"] for e in shown} == {"ValueError: cannot count 'boom'"}
    text = local.run("show", "ui_words").stdout
    assert "errors in user code" in text and "ValueError: cannot count 'boom'" in text


def test_component_lists_every_instance_where_it_runs_and_its_figures(local):
    shown = json.loads(local.run("show", "ui_words", "--json").stdout)
    tasks = sorted(i["task_id"] for c in shown["packing_plan"]["containers"] for i in c["instances"]
                   if i["component"] == "count")
    c = local.get(f"{TOPOLOGY}/component/count?window=60s")
    assert c["kind"] == "bolt" and c["parallelism"] == 2
    assert [i["task_id"] for i in c["instances"]] == tasks
    pids = {p["pid"] for p in shown["processes"]}
    for i in c["instances"]:
        assert i["pid"] in pids and i["state"] == "up" and i["restarts"] == 0 and i["host"]
        assert i["metrics"]["execute_rate"] > 0 and i["metrics"]["queue_depth"] is not None
    assert sum(i["metrics"]["error_count"] for i in c["instances"]) == c["summary"]["error_count"] > 0
    missing = local.get(f"{TOPOLOGY}/component/nope", expect=404)["error"]
    assert missing == "topology 'ui_words' has no component 'nope' (components: sentences, split, count)"


def test_packing_has_requested_used_and_the_physical_plan(local):
    p = wait_until(lambda: (lambda p: p if all(c["used"] for c in p["containers"][1:]) else None)(
        local.get(f"{TOPOLOGY}/packing")), timeout=30, what="measured use of every container")
    shown = json.loads(local.run("show", "ui_words", "--json").stdout)["packing_plan"]
    assert [c["id"] for c in p["containers"]] == [0] + [c["id"] for c in shown["containers"]]
    for mine, theirs in zip(p["containers"][1:], shown["containers"]):
        assert mine["requested"] == {"cpu": theirs["resources"]["cpu"], "ram_mb": theirs["resources"]["ram_mb"],
                                     "disk_mb": theirs["resources"]["disk_mb"]}
        assert [i["task_id"] for i in mine["instances"]] == sorted(i["task_id"] for i in theirs["instances"])
        assert mine["yarn_shape"]["vcores"] >= 1 and mine["used"]["ram_mb"] > 0
    assert {i["task_id"] for i in p["physical_plan"]["instances"]} == {1, 2, 3, 4, 5}
    assert {s["container"] for s in p["physical_plan"]["stmgrs"]} == {1, 2}
    assert p["edges"] == [  # why each edge is not chained (squall/chaining.py)
        {"from": "sentences", "to": "split", "chained": False, "reason": "different parallelism (1 and 2)"},
        {"from": "split", "to": "count", "chained": False, "reason": "fields grouping"}]


def test_logs_come_in_bounded_windows(local):
    index = local.get(f"{TOPOLOGY}/logs")["logs"]
    assert {"container": 1, "process": "stmgr"} in [{k: x[k] for k in ("container", "process")} for x in index]
    head = local.get(f"{TOPOLOGY}/logs/1/stmgr?offset=0&length=100")
    assert head["offset"] == 0 and head["length"] == 100 and len(head["text"].encode()) == 100
    tail = local.get(f"{TOPOLOGY}/logs/1/stmgr")
    assert tail["next_offset"] == tail["size"] and tail["length"] == min(tail["size"], 16384)
    assert local.get(f"{TOPOLOGY}/logs/1/stmgr?length=999999999", expect=400)["error"].startswith("offset")
    assert "has no process 'x'" in local.get(f"{TOPOLOGY}/logs/1/x", expect=404)["error"]


def test_actions_need_the_token_and_answer_as_the_cli_does(local):
    assert local.post(f"{TOPOLOGY}/deactivate", token=None, expect=401)["error"].startswith(
        "this action needs the UI's token")
    assert local.post(f"{TOPOLOGY}/kill", token="guess", expect=403)["error"].startswith("wrong token")
    assert local.get("/api/v1/topology/summary")["topologies"][0]["status"] == "RUNNING"  # nothing changed

    assert local.post("/api/v1/topology/nope/activate", expect=404)["error"] == cli_error(local, "activate", "nope")
    bad = local.post(f"{TOPOLOGY}/update", {"parallelism": {"split": 0}}, expect=400)["error"]
    assert bad == cli_error(local, "update", "ui_words", "--component-parallelism", "split=0")
    bad = local.post(f"{TOPOLOGY}/update", {"parallelism": {"split": "two"}}, expect=400)["error"]
    assert bad == cli_error(local, "update", "ui_words", "--component-parallelism", "split=two")
    bad = local.post(f"{TOPOLOGY}/update", {"parallelism": {"nope": 2}}, expect=400)["error"]
    assert bad == cli_error(local, "update", "ui_words", "--component-parallelism", "nope=2")
    assert local.post(f"{TOPOLOGY}/rebalance", expect=404)["error"].startswith("unknown action 'rebalance'")

    assert local.post(f"{TOPOLOGY}/deactivate")["message"] == "topology 'ui_words' is deactivated"
    assert local.get(TOPOLOGY)["status"] == "PAUSED"
    assert local.post(f"{TOPOLOGY}/activate")["message"] == "topology 'ui_words' is active"
    assert local.get(TOPOLOGY)["status"] == "RUNNING"


def test_restart_replaces_one_container_and_waits_until_it_is_back(local):
    before = {i["task_id"]: i["pid"] for i in local.get(f"{TOPOLOGY}/component/count")["instances"]}
    on_two = {i["task_id"] for c in local.get(f"{TOPOLOGY}/packing")["containers"] if c["id"] == 2
              for i in c["instances"]}
    assert local.post(f"{TOPOLOGY}/restart", {"container": "two"}, expect=400)["error"] == \
        "restart: container 'two' is not a container id"
    assert local.post(f"{TOPOLOGY}/restart", {"container": 2})["message"] == \
        "restarted container 2 of topology 'ui_words'"
    assert local.get(TOPOLOGY)["status"] == "RUNNING"
    after = {i["task_id"]: i["pid"] for i in local.get(f"{TOPOLOGY}/component/count")["instances"]}
    assert on_two & set(before)  # a count task runs in container 2: it gets a new process, the others do not
    assert {t for t in before if after[t] != before[t]} == on_two & set(before)


def test_update_shows_the_cli_dry_run_then_scales(local):
    dry = local.post(f"{TOPOLOGY}/update", {"parallelism": {"split": 3}, "dry_run": True})
    cli = local.run("update", "ui_words", "--component-parallelism", "split=3", "--dry-run").stdout
    assert "\n".join(dry["lines"]) + "\n" == cli and not dry["applied"]
    done = local.post(f"{TOPOLOGY}/update", {"parallelism": {"split": 3}})
    assert done["applied"] and done["message"].startswith("updated topology 'ui_words': every instance of plan")
    assert local.get("/api/v1/topology/summary")["topologies"][0]["instances"] == 6
    assert len(local.get(f"{TOPOLOGY}/component/split")["instances"]) == 3


def test_capacity_shows_the_latest_report_and_applies_it(local):
    reports = local.reports
    assert local.get(f"{TOPOLOGY}/capacity")["report"] is None
    for stamp, par in (("old", 4), ("new", 2)):
        folder = os.path.join(reports, f"capacity-ui_words-{stamp}")
        os.makedirs(folder)
        with open(os.path.join(folder, "report.json"), "w") as f:
            json.dump({"kind": "capacity", "title": f"capacity {stamp}", "facts": {"topology": "ui_words"},
                       "tables": {"recommendations": [
                           {"component": "count", "kind": "bolt", "parallelism": 2, "recommended_parallelism": par}]}},
                      f)
    report = local.get(f"{TOPOLOGY}/capacity")
    assert report["report"]["id"] == "capacity-ui_words-new"
    assert report["dry_run"]["changed"] is False  # count already runs 2 instances
    os.utime(os.path.join(reports, "capacity-ui_words-old", "report.json"))  # now the latest
    report = local.get(f"{TOPOLOGY}/capacity")
    cli = local.run("update", "ui_words", "--from-report", report["report"]["path"], "--dry-run").stdout
    assert report["report"]["id"] == "capacity-ui_words-old" and "\n".join(report["dry_run"]["lines"]) in cli
    assert local.post(f"{TOPOLOGY}/update", {"report": "../secrets"}, expect=404)["error"].startswith("report")
    applied = local.post(f"{TOPOLOGY}/update", {"report": "capacity-ui_words-old"})
    assert applied["applied"] and len(local.get(f"{TOPOLOGY}/component/count")["instances"]) == 4
