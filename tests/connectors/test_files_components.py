"""FileSink and FileSpout driven directly, as the runtime drives them (initialize, init_state, process /
next_tuple, pre_save, post_save, a crash as a new instance restored from a saved state), on real files.

The state handed back after a "crash" goes through the runtime's own saved form (encode_state /
decode_state) and, for a rescale, its key-group split (group_owner) or union (a rescalable spout)."""
import json
import os

import pyarrow.dataset as ds
import pytest

from squall.component import TICK_STREAM, SYSTEM_COMPONENT, TopologyContext, Tuple
from squall.connectors.files import FileSink, FileSpout
from squall.stateful import KeyValueState, decode_state, encode_state, group_owner
from squall.topology import TopologyBuilder
from squall.errors import TopologyError

GROUPS = 128


class Collector:
    """What the runtime attaches to a component: records emits and acks."""

    def __init__(self):
        self.emitted = []  # (stream, values, tup_id)
        self.acked = []

    def emit(self, values, stream, tup_id, anchors, direct_task):
        self.emitted.append((stream, list(values), tup_id))
        return ()

    def ack(self, tup):
        self.acked.append(tup)

    def fail(self, tup):
        raise AssertionError("the sink never fails a tuple")


def context(component, index, parallelism, config):
    return TopologyContext("t", 10 + index, component, {component: [10 + i for i in range(parallelism)]}, config)


def saved(state):
    """A state as a checkpoint saves and loads it."""
    return {key: value for _, key, value in decode_state(encode_state(state, GROUPS))}


def split(states, parallelism):
    """Saved states of a bolt's tasks, re-split by key group over ``parallelism`` tasks (the runtime's rescale)."""
    out = [{} for _ in range(parallelism)]
    for state in states:
        for group, key, value in decode_state(encode_state(state, GROUPS)):
            out[group_owner(group, parallelism, GROUPS)][key] = value
    return out


# ------------------------------------------------------------------ sink
def sink_config(path, mode, **extra):
    config = {"files.path": str(path), "topology.reliability.mode": mode, "squall.state.key.groups": GROUPS,
              "topology.tick.tuple.freq.secs": 1 if mode != "EFFECTIVELY_ONCE" else None}
    config.update(extra)
    FileSink.check_config(config)
    return config


def start_sink(config, index=0, parallelism=1, state=None):
    sink = FileSink()
    sink._collector = Collector()
    sink.initialize(config, context("sink", index, parallelism, config))
    sink.init_state(KeyValueState(dict(state or {})))
    return sink


def rows(sink, fields, values, task=1):
    for v in values:
        sink.process(Tuple(None, "src", "default", task, v, fields))


def read_n(path):
    """The ``n`` of every row a reader sees (hidden files are skipped, as Spark skips them)."""
    table = ds.dataset(str(path), format="parquet", partitioning="hive").to_table()
    return sorted(table.column("n").to_pylist()) if table.num_rows else []


def hidden_files(path):
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs
                  if f.startswith("."))


def test_effectively_once_parts_become_visible_only_when_their_checkpoint_completes(tmp_path):
    out = tmp_path / "out"
    config = sink_config(out, "EFFECTIVELY_ONCE")
    sink = start_sink(config)
    rows(sink, ["n"], [[i] for i in range(10)])
    assert not os.path.exists(out) or read_n(out) == []  # in progress, hidden
    sink.pre_save(1)
    assert read_n(out) == [] and len(hidden_files(out)) == 1  # pending
    sink.post_save(1)
    assert read_n(out) == list(range(10)) and hidden_files(out) == []

    rows(sink, ["n"], [[i] for i in range(10, 20)])
    sink.pre_save(2)
    at_2 = saved(sink.state)
    rows(sink, ["n"], [[i] for i in range(20, 25)])  # then the process dies before DONE(2)
    # checkpoint 2 was complete (a restart restores it): its pending part is finished, the rest deleted
    sink = start_sink(config)  # a new process: a provisional empty state first,
    sink.init_state(KeyValueState(at_2))  # then the RESTORE of checkpoint 2
    rows(sink, ["n"], [[i] for i in range(20, 25)])  # the replay (its first tuple cleans up first)
    assert read_n(out) == list(range(20)) and len(hidden_files(out)) == 1  # and its own new part
    sink.pre_save(3)
    sink.post_save(3)
    assert read_n(out) == list(range(25))


def test_a_rollback_past_a_pending_part_deletes_it_and_the_replay_writes_each_row_once(tmp_path):
    out = tmp_path / "out"
    config = sink_config(out, "EFFECTIVELY_ONCE", **{"files.format": "parquet"})
    sink = start_sink(config)
    rows(sink, ["n"], [[i] for i in range(5)])
    sink.pre_save(1)
    at_1 = saved(sink.state)
    sink.post_save(1)
    rows(sink, ["n"], [[i] for i in range(5, 9)])
    sink.pre_save(2)  # checkpoint 2 never completes (another task failed to save it)
    assert len(hidden_files(out)) == 1
    sink = start_sink(config, state=at_1)
    rows(sink, ["n"], [[i] for i in range(5, 9)])
    assert read_n(out) == list(range(5)) and [f.endswith(".inprogress") for f in hidden_files(out)] == [True]
    sink.pre_save(3)
    sink.post_save(3)
    assert read_n(out) == list(range(9))


def test_a_rescale_of_the_sink_finishes_each_pending_part_once_and_cleans_every_old_task(tmp_path):
    out = tmp_path / "out"
    config = sink_config(out, "EFFECTIVELY_ONCE")
    sinks = [start_sink(config, i, 2) for i in range(2)]
    for i, sink in enumerate(sinks):
        rows(sink, ["n"], [[n] for n in range(i * 100, i * 100 + 50)])
        sink.pre_save(7)  # pending for 7, which completes; DONE never arrives (the update restarts them)
        rows(sink, ["n"], [[n] for n in range(i * 100 + 50, i * 100 + 60)])  # in progress: replayed
    states = split([s.state for s in sinks], 3)
    new = [start_sink(config, i, 3, state=states[i]) for i in range(3)]
    for sink in new:
        sink.pre_save(8)  # the first step after the restore cleans up
    assert hidden_files(out) == []
    assert read_n(out) == list(range(50)) + list(range(100, 150))
    for sink in new:
        assert all(not isinstance(k, str) for k in sink.state.keys())  # finished parts left the state
    # each new task saves markers for its own key groups only: the union is every group once
    markers = [k for s in new for k in s.state.keys()]
    assert len(markers) == len(set(markers)) == GROUPS


def test_at_least_once_a_tuple_is_acked_after_its_part_is_renamed(tmp_path):
    out = tmp_path / "out"
    config = sink_config(out, "ATLEAST_ONCE", **{"files.roll.interval.secs": 5})
    sink = start_sink(config)
    now = [1000.0]
    sink.clock = lambda: now[0]
    rows(sink, ["n"], [[i] for i in range(10)])
    tick = Tuple(None, SYSTEM_COMPONENT, TICK_STREAM, -1, [], ())
    now[0] += 4.9
    sink.process_tick(tick)
    assert sink._collector.acked == [] and read_n(out) == []
    now[0] += 0.2
    sink.process_tick(tick)
    assert [t.values[0] for t in sink._collector.acked] == list(range(10))
    assert read_n(out) == list(range(10))
    metrics = {name: m.get_value_and_reset() for name, (m, _) in sink.context.metrics.items()}
    assert metrics["files_parts_committed"] == 1 and metrics["files_rows_written"] == 10
    assert metrics["files_bytes_written"] == os.path.getsize(next(out.glob("part-*")))


def test_a_part_rolls_by_size(tmp_path):
    out = tmp_path / "out"
    config = sink_config(out, "ATLEAST_ONCE", **{"files.roll.size.mb": 0.001, "files.format": "jsonl"})
    sink = start_sink(config)
    rows(sink, ["n", "text"], [[i, "x" * 20] for i in range(600)])
    finished = [f for f in os.listdir(out) if not f.startswith(".")]
    assert len(finished) == 2 and len(sink._collector.acked) == 512  # checked every 256 rows
    sink.close()  # a clean shutdown commits the rest
    lines = [json.loads(x) for f in os.listdir(out) for x in open(out / f)]
    assert sorted(x["n"] for x in lines) == list(range(600)) and lines[0]["text"] == "x" * 20


def test_at_most_once_rolls_commit_and_hold_no_ack(tmp_path):
    out = tmp_path / "out"
    sink = start_sink(sink_config(out, "ATMOST_ONCE", **{"files.roll.interval.secs": 2}))
    now = [50.0]
    sink.clock = lambda: now[0]
    rows(sink, ["n"], [[i] for i in range(3)])
    now[0] += 2
    sink.process_tick(Tuple(None, SYSTEM_COMPONENT, TICK_STREAM, -1, [], ()))
    assert read_n(out) == [0, 1, 2] and sink._collector.acked == []


def test_partition_by_writes_hive_folders_without_the_partition_fields(tmp_path):
    out = tmp_path / "out"
    config = sink_config(out, "EFFECTIVELY_ONCE", **{"files.partition.by": "day,kind", "files.format": "jsonl"})
    sink = start_sink(config)
    rows(sink, ["n", "day", "kind"], [[i, 1 + i % 2, "a/b" if i < 3 else "c"] for i in range(6)])
    sink.pre_save(1)
    sink.post_save(1)
    folders = sorted(os.path.relpath(d, out) for d, _, fs in os.walk(out) if fs)
    assert folders == ["day=1/kind=a%2Fb", "day=1/kind=c", "day=2/kind=a%2Fb", "day=2/kind=c"]
    table = ds.dataset(str(out), format="json", partitioning="hive").to_table()
    got = sorted(zip(table.column("n").to_pylist(), table.column("day").to_pylist()))
    assert got == [(i, 1 + i % 2) for i in range(6)]
    with open(next(os.path.join(d, f) for d, _, fs in os.walk(out) for f in fs)) as f:
        assert set(json.loads(f.readline())) == {"n"}


def test_sink_config_errors_name_the_key(tmp_path):
    with pytest.raises(ValueError, match=r"files.roll.interval.secs 29 \+ topology.tick.tuple.freq.secs 1 \+ "):
        FileSink.check_config({"files.path": "x", "topology.reliability.mode": "ATLEAST_ONCE",
                               "files.roll.interval.secs": 29})  # the sink's own tick: 1 s
    with pytest.raises(ValueError, match=r"files.roll.interval.secs 30 \+ topology.tick.tuple.freq.secs 1 \+ "
                                         r"topology.state.checkpoint.interval.secs 1 must stay below"):
        FileSink.check_config({"files.path": "x", "topology.reliability.mode": "ATLEAST_ONCE",
                               "topology.tick.tuple.freq.secs": 1, "files.roll.interval.secs": 30,
                               "topology.message.timeout.secs": 30, "topology.state.checkpoint.interval.secs": 1})
    with pytest.raises(ValueError, match=r"files.format 'csv' is not a format .*: choose parquet, jsonl"):
        FileSink.check_config({"files.path": "x", "files.format": "csv"})
    blocker = tmp_path / "f"
    blocker.write_text("")
    with pytest.raises(OSError, match=rf"files.path {blocker}/sub: cannot write there"):
        FileSink.preflight({"files.path": str(blocker / "sub")})


def test_a_bad_files_key_is_refused_naming_the_component():
    from squall.preflight import check_components

    b = TopologyBuilder("t")
    b.add_spout("in", FileSpout, config={"files.path": "/tmp"})
    b.add_bolt("out", FileSink, inputs=["in"], config={"files.path": "/tmp", "files.partition.bi": "x"})
    with pytest.raises(TopologyError, match=r"components.out: unknown file connector key "
                                            r"'files.partition.bi'; did you mean 'files.partition.by'\?"):
        check_components(b.build().plan)  # as every command that loads the topology file does


# ------------------------------------------------------------------ spout
def spout_config(path, mode, fmt="text", **extra):
    config = {"files.path": str(path), "files.format": fmt, "topology.reliability.mode": mode,
              "files.read.batch": 3, "files.discover.interval.secs": 0.001}
    config.update(extra)
    FileSpout.check_config(config)
    return config


def start_spout(config, index=0, parallelism=1, state=None, cls=FileSpout):
    spout = cls()
    spout._collector = Collector()
    spout.initialize(config, context("in", index, parallelism, config))
    spout.init_state(KeyValueState(dict(state or {})))
    return spout


def write(folder, name, text):
    """As a producer should: under a hidden name, then renamed."""
    target = folder / name
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.tmp"
    tmp.write_bytes(text if isinstance(text, bytes) else text.encode())
    os.replace(tmp, target)


def drain(spout, calls=200):
    """``calls`` next_tuple calls, each after the discovery interval (200 calls can take less than it)."""
    for _ in range(calls):
        spout.next_discover = 0.0
        spout.next_tuple()
    return spout._collector.emitted


def test_the_spout_reads_new_files_ignores_hidden_ones_and_resumes_from_a_checkpoint(tmp_path):
    src = tmp_path / "in"
    write(src, "a.txt", "a0\na1\na2\na3\na4\n")
    (src / ".b.txt.inprogress").write_text("hidden\n")
    config = spout_config(src, "EFFECTIVELY_ONCE")
    spout = start_spout(config)
    spout.next_tuple()
    at_first = saved(spout.state)  # a checkpoint after 3 lines
    got = drain(spout)
    assert [(s, v) for s, v, _ in got] == [("default", ["a.txt", i, f"a{i}"]) for i in range(5)]
    write(src, "sub/b.txt", b"b0\n\xff\nb2")
    got = drain(spout)[5:]
    assert [v for s, v, _ in got if s == "default"] == [["sub/b.txt", 0, "b0"], ["sub/b.txt", 2, "b2"]]
    assert [v[:2] for s, v, _ in got if s == "errors"] == [["sub/b.txt", 1]]
    assert spout.state.get("a.txt") == [5, 15, True]
    # rollback to the first checkpoint: lines 3 and 4 of a.txt again, then b.txt
    spout = start_spout(config, state=at_first)
    got = [v for s, v, _ in drain(spout) if s == "default"]
    assert got[:2] == [["a.txt", 3, "a3"], ["a.txt", 4, "a4"]] and len(got) == 4
    os.unlink(src / "a.txt")
    drain(spout, 1)
    assert "a.txt" not in spout.state and "sub/b.txt" in spout.state  # a finished file gone is forgotten


def test_at_least_once_failed_records_are_emitted_again_and_the_state_is_the_contiguous_ack(tmp_path):
    src = tmp_path / "in"
    write(src, "a.jsonl", "".join(json.dumps({"n": i}) + "\n" for i in range(6)))
    spout = start_spout(spout_config(src, "ATLEAST_ONCE", "jsonl"))
    emitted = drain(spout, 3)
    ids = [i for _, _, i in emitted]
    assert ids == [("a.jsonl", i) for i in range(6)]
    for i in (0, 1, 3, 4, 5):
        spout.ack(ids[i])
    spout.fail(ids[2])
    assert spout.state.get("a.jsonl")[:1] == [2]  # 2 failed: the position stops before it
    spout.next_tuple()
    assert spout._collector.emitted[-1] == ("default", ["a.jsonl", 2, {"n": 2}], ("a.jsonl", 2))
    spout.ack(("a.jsonl", 2))
    assert spout.state.get("a.jsonl")[0::2] == [6, True]
    spout.ack(("a.jsonl", 2))  # a second ack, or one of a run before a rollback: ignored


def test_a_restart_at_least_once_resumes_after_the_acked_records(tmp_path):
    src = tmp_path / "in"
    write(src, "a.csv", "k,v\n" + "".join(f"k{i},{i}\n" for i in range(5)))
    config = spout_config(src, "ATLEAST_ONCE", "csv")
    spout = start_spout(config)
    emitted = drain(spout, 1)
    spout.ack(emitted[0][2])
    spout.ack(emitted[2][2])
    spout = start_spout(config, state=saved(spout.state))
    assert [v for _, v, _ in drain(spout, 3)] == [["a.csv", i, {"k": f"k{i}", "v": str(i)}] for i in range(1, 5)]


def test_a_rescale_of_the_spout_reads_every_file_once(tmp_path):
    src = tmp_path / "in"
    for f in range(12):
        write(src, f"f{f}.txt", "".join(f"{f}-{i}\n" for i in range(4)))
    config = spout_config(src, "EFFECTIVELY_ONCE", **{"files.read.batch": 2})
    old = [start_spout(config, i, 2) for i in range(2)]
    seen = []
    for s in old:
        s.next_tuple()  # the first two lines of its first file
        seen += [v[2] for _, v, _ in s._collector.emitted]
    union = {}
    for s in old:
        union.update(saved(s.state))
    new = [start_spout(config, i, 3, state=union) for i in range(3)]
    for s in new:
        seen += [v[2] for _, v, _ in drain(s)]
    assert sorted(seen) == sorted(f"{f}-{i}" for f in range(12) for i in range(4))


class Orders(FileSpout):
    fields = ("id", "amount")


def test_a_subclass_with_fields_emits_them_from_parquet_rows(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "in"
    src.mkdir()
    pq.write_table(pa.table({"id": [1, 2], "amount": [2.5, 3.5], "other": ["x", "y"]}), str(src / "o.parquet"))
    assert [s.fields for s in Orders.declared_streams()] == [("file", "offset", "id", "amount"),
                                                             ("file", "offset", "reason")]
    spout = start_spout(spout_config(src, "EFFECTIVELY_ONCE", "parquet"), cls=Orders)
    assert [v for _, v, _ in drain(spout, 2)] == [["o.parquet", 0, 1, 2.5], ["o.parquet", 1, 2, 3.5]]


def test_spout_config_errors(tmp_path):
    with pytest.raises(ValueError, match=r"files.path .*/missing: no such directory"):
        FileSpout.preflight({"files.path": str(tmp_path / "missing")})
    with pytest.raises(ValueError, match=r"files.format 'xml' is not a format .*: choose text, jsonl, csv, parquet"):
        FileSpout.check_config({"files.path": "x", "files.format": "xml"})
    with pytest.raises(ValueError, match=r"files.format is text, whose record is a line: Orders.fields"):
        Orders.check_config({"files.path": "x"})
