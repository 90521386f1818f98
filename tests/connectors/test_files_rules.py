"""The file connectors' pure rules and their I/O parts alone: keys, part names, roll policy, restore
cleanup, file assignment, ack tracking, record readers and writers, the filesystem store."""
import io
import json
import os
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import fs as pafs

from squall.connectors.files import keys as K
from squall.connectors.files.formats import CsvReader, JsonLinesReader, LineReader, ParquetReader, part_writer
from squall.connectors.files.fs import FileStore, is_hidden
from squall.connectors.files.parts import (
    RollPolicy, final_name, in_progress_path, marker_keys, owned_markers, parse_hidden, partition_folder,
    pending_path, restore_plan,
)
from squall.connectors.files.positions import AckTracker, owner
from squall.stateful import key_group, owned_groups


# keys ----------------------------------------------------------------------------------------------
def test_an_unknown_files_key_names_the_nearest_one():
    with pytest.raises(ValueError, match=r"unknown file connector key 'files.rol.size.mb'; did you mean "
                                         r"'files.roll.size.mb'\?"):
        K.check_keys({"files.rol.size.mb": 3, "kafka.topic": "x", "other": 1})


def test_an_unknown_path_scheme_is_refused_without_io():
    with pytest.raises(ValueError, match=r"files.path 's3://b/x': unknown scheme 's3' \(a directory, file:// or hdfs://\)"):
        K.check_path({"files.path": "s3://b/x"})
    K.check_path({})  # it may come with --config-property
    K.check_path({"files.path": "hdfs://nn:8020/out"})


def test_an_unknown_format_names_the_choices():
    with pytest.raises(ValueError, match=r"files.format 'orc' is not a format .*: choose parquet, jsonl"):
        K.file_format({"files.format": "orc"}, K.SINK_FORMATS)
    assert K.file_format({}, K.SPOUT_FORMATS) == "text"
    assert K.file_format({"files.format": "CSV"}, K.SPOUT_FORMATS) == "csv"


def test_bad_numbers_and_fields_name_their_key():
    with pytest.raises(ValueError, match=r"files.roll.size.mb must be a positive number, got -1"):
        K.positive({"files.roll.size.mb": -1}, K.ROLL_SIZE)
    with pytest.raises(ValueError, match=r"files.path is not set"):
        K.path({})
    with pytest.raises(ValueError, match=r"files.partition.by names a field twice"):
        K.field_list({"files.partition.by": "a, a"}, K.PARTITION_BY)
    assert K.field_list({"files.partition.by": "day, kind"}, K.PARTITION_BY) == ["day", "kind"]
    assert K.positive({}, K.ROLL_INTERVAL) == 10.0


# part names and roll policy ------------------------------------------------------------------------
def test_part_names_round_trip_and_stay_hidden_until_finished():
    final = "day=1/" + final_name(3, "00ab12cd", 7, "parquet")
    assert final == "day=1/part-00003-00ab12cd-000007.parquet"
    progress, pending = in_progress_path(final), pending_path(final, 42)
    assert progress == "day=1/.part-00003-00ab12cd-000007.parquet.inprogress"
    assert pending == "day=1/.part-00003-00ab12cd-000007.parquet.pending-42"
    assert is_hidden(progress) and is_hidden(pending) and not is_hidden(final)
    p = parse_hidden(pending)
    assert (p.final, p.task, p.checkpoint, p.folder) == (final, 3, 42, "day=1")
    assert parse_hidden(progress).checkpoint is None
    assert parse_hidden(final) is None and parse_hidden(".other-file") is None


def test_partition_folders_are_hive_style_and_escaped():
    assert partition_folder(["day", "kind"], [3, "a/b"]) == "day=3/kind=a%2Fb"
    assert partition_folder(["k"], [None]) == "k=__HIVE_DEFAULT_PARTITION__"


def test_roll_policy_by_size_or_age():
    policy = RollPolicy(max_bytes=1000, max_secs=5)
    assert not policy.due(999, opened_at=100.0, now=104.9)
    assert policy.due(1000, opened_at=100.0, now=100.0)
    assert policy.due(0, opened_at=100.0, now=105.0)


# restore rules ------------------------------------------------------------------------------------
def test_every_key_group_has_a_marker_and_every_task_saves_those_of_its_groups():
    markers = marker_keys(128)
    assert sorted(markers) == list(range(128))
    assert all(key_group(k, 128) == g for g, k in markers.items())
    for par in (1, 3, 5):
        saved = [m for i in range(par) for m in owned_markers(markers, i, par, 128)]
        assert sorted(saved) == sorted(markers.values())  # once each
    # after a rescale 3 -> 2 each new task owns at least one group some old task saved a marker for
    for i in range(2):
        assert set(owned_groups(i, 2, 128))


def test_a_restore_finishes_its_pending_parts_and_deletes_only_its_garbage():
    def hidden(task, seq, cid=None):
        final = final_name(task, "aaaa0000", seq, "parquet")
        return in_progress_path(final) if cid is None else pending_path(final, cid)

    mine = final_name(1, "aaaa0000", 1, "parquet")
    state = {mine: [5, pending_path(mine, 5)]}
    files = [pending_path(mine, 5),  # in the state: finished
             hidden(1, 2),  # in progress: its tuples are replayed
             hidden(1, 3, cid=6),  # pending for a checkpoint that never completed
             hidden(1, 4, cid=4),  # pending for a complete one, not in this state: another task's now
             hidden(0, 5),  # task 0's
             hidden(3, 6),  # old task 3 of 4, now of 2: 3 % 2 == 1, this task cleans it
             "part-00001-aaaa0000-000000.parquet"]
    plan = restore_plan(state, 5, files, index=1, parallelism=2)
    assert plan.finish == [(pending_path(mine, 5), mine)]
    assert plan.delete == sorted([hidden(1, 2), hidden(1, 3, cid=6), hidden(3, 6)])


# spout assignment and acks --------------------------------------------------------------------------
def test_files_are_spread_over_tasks_stably():
    names = [f"in/file-{i}.txt" for i in range(200)]
    owners = [owner(n, 3) for n in names]
    assert owners == [owner(n, 3) for n in names]
    assert set(owners) == {0, 1, 2}
    assert owner("a.txt", 1) == 0


def test_the_committed_position_moves_only_over_acks_without_a_gap():
    t = AckTracker(10, 100)
    for offset, end in [(10, 110), (11, 125), (12, 130)]:
        t.emitted(offset, end)
    assert not t.ack(11) and t.committed == (10, 100)
    assert t.ack(10) and t.committed == (12, 125)
    assert not t.ack(99)  # never emitted (a run before a rollback)
    t.eof = True
    assert not t.done
    assert t.ack(12) and t.committed == (13, 130) and t.done


# readers ------------------------------------------------------------------------------------------
def read_all(reader, n=2):
    out = []
    while not reader.done:
        out += reader.read(n)
    return out


def test_lines_resume_at_a_byte_position_and_a_bad_line_is_an_error():
    data = b"one\ntwo\n\xff\xfe\nlast"
    records = read_all(LineReader(io.BytesIO(data), 0, 0))
    assert [(r.offset, r.record) for r in records] == [(0, "one"), (1, "two"), (2, None), (3, "last")]
    assert "not UTF-8" in records[2].error and records[-1].end == len(data)
    again = read_all(LineReader(io.BytesIO(data), 1, records[0].end))
    assert [(r.offset, r.record) for r in again] == [(1, "two"), (2, None), (3, "last")]


def test_json_lines_and_csv_records():
    data = b'{"a": 1}\n[1]\nnot json\n{"a": 2}\n'
    records = read_all(JsonLinesReader(io.BytesIO(data), 0, 0))
    assert [r.record for r in records] == [{"a": 1}, None, None, {"a": 2}]
    assert "not a JSON object" in records[1].error and "not JSON" in records[2].error
    data = b'name,n\r\nx,1\n"y, z",2\nshort\n'
    records = read_all(CsvReader(io.BytesIO(data), 0, 0))
    assert [r.record for r in records] == [{"name": "x", "n": "1"}, {"name": "y, z", "n": "2"}, None]
    assert records[2].error == "1 fields where the header has 2"
    again = read_all(CsvReader(io.BytesIO(data), 1, records[0].end))
    assert [r.offset for r in again] == [1, 2]


def test_parquet_rows_resume_at_a_row_across_row_groups(tmp_path):
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"n": list(range(10))}), path, row_group_size=3)
    rows = read_all(ParquetReader(pa.OSFile(path), 4, 4), n=4)
    assert [(r.offset, r.record["n"], r.end) for r in rows] == [(i, i, i + 1) for i in range(4, 10)]


def test_writers_write_whole_files_and_count_their_bytes():
    for fmt in ("parquet", "jsonl"):
        out = pa.BufferOutputStream()
        w = part_writer(fmt, out, ["k", "v"])
        for i in range(5):
            w.add([f"k{i}", i])
        estimate = w.size()
        size = w.close()
        data = out.getvalue().to_pybytes()
        if fmt == "parquet":
            assert pq.read_table(pa.BufferReader(data)).to_pylist()[4] == {"k": "k4", "v": 4}
        else:
            assert [json.loads(x) for x in data.decode().splitlines()][4] == {"k": "k4", "v": 4}
        assert size == len(data) and (estimate == size if fmt == "jsonl" else estimate > 0)


def test_a_parquet_column_of_mixed_types_names_its_field():
    w = part_writer("parquet", pa.BufferOutputStream(), ["k", "v"])
    w.add(["a", 1])
    w.add(["b", "two"])
    with pytest.raises(ValueError, match=r"field 'v': its values cannot be written to one Parquet column"):
        w.close()


# the store, on the local disk and through pyarrow's filesystem (the hdfs:// code path) ------------------
@pytest.fixture(params=["local", "arrow", "hdfs"])
def store(request, tmp_path):
    root = tmp_path / "out"
    if request.param == "local":
        return FileStore.open(str(root))
    if request.param == "hdfs":
        uri = os.environ.get("SQUALL_TEST_HDFS")
        if not uri:
            pytest.skip("no HDFS: set SQUALL_TEST_HDFS=hdfs://namenode:port/dir to run against one")
        return FileStore.open(f"{uri.rstrip('/')}/{uuid.uuid4().hex}")
    return FileStore(pafs.SubTreeFileSystem("/", pafs.LocalFileSystem()), str(root), f"hdfs-like://{root}")


def test_the_store_writes_lists_renames_idempotently_and_deletes(store):
    with store.open_output("a=1/.x.inprogress") as out:
        out.write(b"data")
    assert [e.path for e in store.walk()] == ["a=1/.x.inprogress"]
    assert store.rename("a=1/.x.inprogress", "a=1/x")
    assert not store.rename("a=1/.x.inprogress", "a=1/x")  # done already
    with pytest.raises(OSError, match=r"cannot commit .*a=1/.y: neither it nor .*a=1/y exists"):
        store.rename("a=1/.y", "a=1/y")
    assert [(e.path, e.size) for e in store.walk()] == [("a=1/x", 4)]
    store.delete("a=1/x")
    store.delete("a=1/x")
    assert list(store.walk()) == []


def test_an_unwritable_path_is_named(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(OSError, match=rf"files.path {blocker}/out: cannot write there"):
        FileStore.open(str(blocker / "out")).check_writable()
