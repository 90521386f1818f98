"""Shipped files (``submit|update --files``) on the local scheduler: every task reads the submitted version,
an update reaches every task (chained ones too) through ``on_file_update`` and the tuples it maps, old
versions are deleted, a restarted task reads the version in force, a bad update changes nothing, kill
removes the record. One topology run."""
import glob
import json
import os
import signal

from e2e_harness import TOPOLOGIES, records_left, wait_until

from squall.state import Kind

TABLES = {
    1: {"alpha": "one", "beta": "two", "gamma": "three", "delta": "four"},
    2: {"alpha": "uno", "beta": "dos", "gamma": "tres", "delta": "cuatro"},
    3: {"alpha": "eins", "beta": "zwei", "gamma": "drei", "delta": "vier"},
}


def write_table(path, version):
    path.write_text("".join(f"{w}={v}\n" for w, v in TABLES[version].items()))
    return path


def json_files(out, pattern):
    found = {}
    for path in glob.glob(os.path.join(out, pattern)):
        with open(path) as f:
            found[os.path.basename(path)] = json.load(f)
    return found


def records(out):
    """(word, value, version) of every tuple the record tasks received."""
    rows = []
    for path in glob.glob(os.path.join(out, "records-*.txt")):
        with open(path) as f:
            rows += [tuple(line.split()) for line in f if line.endswith("\n")]
    return [(w, v, int(n)) for w, v, n in rows]


def mapped_by(out, version):
    return {(w, v) for w, v, n in records(out) if n == version}


def test_shipped_file_reaches_every_task_and_an_update_reaches_them_again(cluster, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    v1 = write_table(tmp_path / "table.txt", 1)
    cluster.squall("submit", os.path.join(TOPOLOGIES, "lookup_files.py"), "--files", f"{v1}#lookup",
                   "--config-property", f"e2e.out.dir={out}")
    state = cluster.state()
    tasks = {i.id.task_id: i.id.component for i in state.get(Kind.PHYSICAL_PLAN, "lookup_files").instances}
    shown = json.loads(cluster.squall("show", "lookup_files", "--json")[0])
    assert shown["chains"] == [["lookup", "record"]]
    run_files = os.path.join(cluster.run_dir("lookup_files"), "files", "lookup")

    # every task reads version 1 from the run folder, and the lookup maps through it
    wait_until(lambda: len(json_files(out, "read-*.json")) == len(tasks), what="every task to read the file")
    read = json_files(out, "read-*.json")
    assert {int(n[len("read-"):-len(".json")]): r["component"] for n, r in read.items()} == tasks
    assert {r["path"] for r in read.values()} == {os.path.join(run_files, "1", "table.txt")}
    assert {r["text"] for r in read.values()} == {v1.read_text()}
    wait_until(lambda: mapped_by(out, 1) == set(TABLES[1].items()), what="every word mapped by version 1")

    # an update with a new file under the same alias: every task's on_file_update, the new mapping
    v2 = write_table(tmp_path / "table-v2.txt", 2)
    printed, _ = cluster.squall("update", "lookup_files", "--files", f"{v2}#lookup")
    assert "lookup: version 2" in printed
    wait_until(lambda: len(json_files(out, "updated-*-2.json")) == len(tasks), what="every task's on_file_update")
    new_path = os.path.join(run_files, "2", "table-v2.txt")
    for name, update in json_files(out, "updated-*-2.json").items():
        assert (update["alias"], update["path"], update["get_file"], update["text"]) == \
            ("lookup", new_path, new_path, v2.read_text()), name
    wait_until(lambda: mapped_by(out, 2) == set(TABLES[2].items()), what="every word mapped by version 2")

    shown = json.loads(cluster.squall("show", "lookup_files", "--json")[0])
    assert [(f["alias"], f["version"], f["name"], f["size"]) for f in shown["files"]] == \
        [("lookup", 2, "table-v2.txt", len(v2.read_bytes()))]
    assert "  shipped files: lookup version 2 (table-v2.txt, " in cluster.squall("show", "lookup_files")[0]

    # a third version: versions before the previous one are deleted
    v3 = write_table(tmp_path / "table-v3.txt", 3)
    dry = json.loads(cluster.squall("update", "lookup_files", "--files", f"{v3}#lookup", "--dry-run", "--json")[0])
    assert [(f["alias"], f["version"], f["name"]) for f in dry["files"]] == [("lookup", 3, "table-v3.txt")]
    assert (dry["dry_run"], dry["applied"]) == (True, False)
    assert [f["version"] for f in json.loads(cluster.squall("show", "lookup_files", "--json")[0])["files"]] == [2]
    cluster.squall("update", "lookup_files", "--files", f"{v3}#lookup")
    wait_until(lambda: len(json_files(out, "updated-*-3.json")) == len(tasks), what="every task at version 3")
    assert sorted(os.listdir(run_files)) == ["2", "3"]
    # each tuple was mapped by the table of the version it names, whatever the moment of the switch
    assert all(TABLES[n][w] == v for w, v, n in records(out))

    # the tasks of a process killed (SIGKILL) and restarted read the version in force
    instances = state.get(Kind.PHYSICAL_PLAN, "lookup_files").instances
    pid = next(i.pid for i in instances if i.id.component == "lookup")
    restarted = {f"read-{i.id.task_id}.json" for i in instances if i.pid == pid}
    for name in restarted:
        os.remove(out / name)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: restarted <= set(json_files(out, "read-*.json")), what="the killed tasks to start again")
    for name in restarted:
        again = json_files(out, name)[name]
        assert (again["path"], again["text"]) == (os.path.join(run_files, "3", "table-v3.txt"), v3.read_text())

    # a bad update is refused and changes nothing
    before = state.get(Kind.FILES, "lookup_files")
    _, err = cluster.squall("update", "lookup_files", "--files", f"{v1}#other", expect=2)
    assert err.strip() == (f"squall: error: --files {v1}#other: topology 'lookup_files' has no shipped file "
                           "'other' (shipped: lookup); an update replaces files shipped at submit")
    _, err = cluster.squall("update", "lookup_files", "--files", f"{tmp_path}#lookup", expect=2)
    assert "is a directory" in err
    assert state.get(Kind.FILES, "lookup_files") == before

    cluster.squall("kill", "lookup_files")
    assert records_left(state, "lookup_files") == []
