"""``--files`` refuses bad input in one line, exit 2, before anything is launched or changed; an update
stores a new version, writes the record and deletes versions before the previous one."""
import os

import pytest

from squall.cli import main
from squall.idl import schema
from squall.scheduler import shipped_files
from squall.scheduler.shipped_files import FilesError, LocalFile, parse
from squall.state import Kind, StateError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORD_COUNT = os.path.join(REPO, "examples", "word_count.py")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SQUALL_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "table.txt"
    path.write_text("alpha=one\n")
    return path


def test_an_alias_defaults_to_the_file_name(table):
    assert parse([str(table), f"{table}#lookup"]) == [LocalFile(str(table), "table.txt", 10),
                                                      LocalFile(str(table), "lookup", 10)]


@pytest.mark.parametrize("argument,message", [
    ("{tmp}/missing.txt#lookup", "--files {tmp}/missing.txt#lookup: no such file '{tmp}/missing.txt'"),
    ("{tmp}#lookup", "--files {tmp}#lookup: '{tmp}' is a directory; ship a file (an archive of the folder)"),
    ("{tmp}/table.txt#../up", "--files {tmp}/table.txt#../up: alias '../up' must be letters, digits, '_', '.' "
                              "and '-', starting with a letter or digit"),
    ("#lookup", "--files '#lookup': give PATH or PATH#ALIAS"),
])
def test_bad_files_are_named(tmp_path, table, argument, message):
    with pytest.raises(FilesError) as raised:
        parse([argument.format(tmp=tmp_path)])
    assert str(raised.value) == message.format(tmp=tmp_path)


def test_an_alias_given_twice_is_refused(tmp_path, table):
    other = tmp_path / "other.txt"
    other.write_text("x")
    with pytest.raises(FilesError, match=f"^--files {other}#t: alias 't' is given twice \\(also for {table}\\)$"):
        parse([f"{table}#t", f"{other}#t"])


def _refused(home, capsys, argv):
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 2, err
    assert err.startswith("squall: error: ") and err.count("\n") == 1
    assert not os.path.exists(home / "topologies"), "a refused submit made a run folder"
    state = home / "state"
    assert not state.exists() or all(not os.listdir(state / d) for d in os.listdir(state))
    return err


def test_submit_refuses_a_missing_file_before_anything_is_launched(home, capsys, tmp_path):
    err = _refused(home, capsys, ["submit", WORD_COUNT, "--files", f"{tmp_path}/nope.txt"])
    assert err == f"squall: error: --files {tmp_path}/nope.txt: no such file '{tmp_path}/nope.txt'\n"


def test_submit_refuses_files_over_the_cap_before_anything_is_launched(home, capsys, tmp_path, table):
    big = tmp_path / "model.bin"
    big.write_bytes(b"\0" * (2 * 1024 * 1024))
    err = _refused(home, capsys, ["submit", WORD_COUNT, "--files", str(table), f"{big}#model",
                                  "--config-property", "squall.files.max.mb=1.5"])
    assert err == ("squall: error: shipped files: they would hold 2.00 MiB together, above squall.files.max.mb=1.5 "
                   "(the largest: 'model', 2.00 MiB)\n")


def test_update_files_is_an_update_of_its_own(home, capsys, table):
    code = main(["update", "wc", "--files", str(table), "--component-parallelism", "count=2"])
    _, err = capsys.readouterr()
    assert code == 2 and err == ("squall: error: update --files ships files and changes nothing else: give the "
                                 "other changes in an update of their own\n")


def _running(state, run_dir, files):
    execution = schema.ExecutionState(topology_name="t", run_id="r1", run_dir=str(run_dir), submit_time=0.0,
                                      submitter="me", status=schema.TopologyStatus.RUNNING, secret="s",
                                      cluster="local", python="")
    state.put(Kind.EXECUTION_STATE, "t", execution)
    record = shipped_files.ship_at_submit(parse(files), execution)
    state.put(Kind.FILES, "t", record)
    return execution, record


def test_an_update_stores_the_next_version_and_keeps_only_it_and_the_previous(state, tmp_path, table):
    execution, record = _running(state, tmp_path / "run", [f"{table}#lookup"])
    folder = tmp_path / "run" / "files" / "lookup"
    assert record.files[0].stored == f"file://{folder}/1/table.txt" and os.listdir(folder) == ["1"]
    config = {"squall.files.max.mb": 1.0, "squall.state.storage": ""}
    for version in (2, 3):
        newer = tmp_path / f"table-{version}.txt"
        newer.write_text(f"alpha={version}\n")
        entry, = shipped_files.update(state, execution, parse([f"{newer}#lookup"]), config)
        assert (entry.version, entry.name, entry.size) == (version, newer.name, len(newer.read_text()))
        assert (folder / str(version) / newer.name).read_text() == newer.read_text()
        assert state.get(Kind.FILES, "t").files == [entry]
    assert sorted(os.listdir(folder)) == ["2", "3"]


def test_a_dry_run_update_changes_nothing(state, tmp_path, table):
    execution, record = _running(state, tmp_path / "run", [f"{table}#lookup"])
    entry, = shipped_files.update(state, execution, parse([f"{table}#lookup"]),
                                  {"squall.files.max.mb": 1.0, "squall.state.storage": ""}, dry_run=True)
    assert entry.version == 2
    assert state.get(Kind.FILES, "t") == record
    assert os.listdir(tmp_path / "run" / "files" / "lookup") == ["1"]


def test_an_update_over_the_cap_changes_nothing(state, tmp_path, table):
    execution, record = _running(state, tmp_path / "run", [f"{table}#lookup"])
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(FilesError, match=r"hold 2.0 KiB together, above squall.files.max.mb=0.001 "
                                         r"\(the largest: 'lookup', 2.0 KiB\)"):
        shipped_files.update(state, execution, parse([f"{big}#lookup"]),
                             {"squall.files.max.mb": 0.001, "squall.state.storage": ""})
    assert state.get(Kind.FILES, "t") == record


def test_an_update_on_yarn_needs_a_shared_storage(state, tmp_path, table):
    execution, record = _running(state, tmp_path / "run", [f"{table}#lookup"])
    execution.cluster = "yarn"
    with pytest.raises(StateError, match="update --files on yarn stores the new version where every "
                                         "container reads it: set it to an hdfs:// URI"):
        shipped_files.update(state, execution, parse([f"{table}#lookup"]),
                             {"squall.files.max.mb": 1.0, "squall.state.storage": "/some/dir"})
    assert state.get(Kind.FILES, "t") == record
