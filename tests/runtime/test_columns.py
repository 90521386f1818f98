"""Columnar batches (``emit_columns``, ``TupleBatch.columns``): routed in bulk to the tasks the per-tuple
route picks, sent as columnar runs, and taken as columns or rows by either kind of consumer."""
import msgpack
import pytest

from squall import Bolt, Grouping, Spout
from squall.component import TupleBatch, TupleSource
from squall.runtime.acking import TASK_SHIFT, root_task
from squall.runtime.instance.chain import Chain
from squall.runtime.instance.emit import ColumnRoute, per_destination_columns
from squall.runtime.protocol import ACK, DATA, DATA_HEADER_SIZE, FrameReader, data_frame, frame_dest
from squall.runtime.routing import FastRoute, _fields, stable_hash

from test_chain import MID, OUT, SRC, BatchOut, Mid, Out, make, plan_frame, rows, sent, topology
from test_fast_path import Src, build, instance

KEYS = ["a", "word", "", "é", "日本語", "x" * 40, "y" * 300, "z" * 70000, "ñ" * 20, 0, 1, -1, 2**40, -2**63, 1.0,
        2.5, True, None, b"", b"bytes", b"\xff" * 300, (1, "a"), [1, 2], ("é", b"b")]


def bulk(choose, columns):
    """The task of each tuple of ``columns`` by the chooser's bulk route."""
    return [choose.owners[slot] for slot in choose.slots(columns)]


@pytest.mark.parametrize("key_groups", [None, 16])
@pytest.mark.parametrize("tasks", [[3], [3, 4], [5, 7, 9, 11, 13]])
def test_the_bulk_route_of_a_key_column_is_the_per_tuple_route(tasks, key_groups):
    choose = _fields(tasks, [0], key_groups)
    n = key_groups or len(tasks)
    owners = tasks if key_groups is None else [tasks[g * len(tasks) // n] for g in range(n)]
    keys = KEYS * 2  # the second time from the cache
    per_tuple = [choose([k, 0]) for k in keys]
    assert per_tuple == [owners[stable_hash([k]) % n] for k in keys]
    assert bulk(choose, [keys, [0] * len(keys)]) == per_tuple
    assert bulk(_fields(tasks, [0], key_groups), [keys, [0] * len(keys)]) == per_tuple, "from a cold cache"
    words = [w for w in KEYS if isinstance(w, str)]
    assert bulk(choose, [words, words]) == [choose([w, 0]) for w in words], "every key known: the C-speed pass"


def test_the_bulk_route_of_two_key_columns_is_the_per_tuple_route():
    choose = _fields([1, 2, 3], [1, 0])
    first, second = KEYS, list(reversed(KEYS))
    assert bulk(choose, [first, second]) == [choose([a, b]) for a, b in zip(first, second)]
    assert bulk(choose, [first, second]) == [[1, 2, 3][stable_hash([b, a]) % 3] for a, b in zip(first, second)]


@pytest.mark.parametrize("slots", [2, 9, 300], ids=["2 tasks", "9 tasks", "300 slots"])
def test_columns_are_split_per_destination_in_emit_order(slots):
    owners = [10 + s % 9 for s in range(slots)]
    route = ColumnRoute.of(FastRoute(lambda v: 0, 2, None, 0, None, lambda c: [], owners))
    assert (route.selectors is None) == (slots > 256)
    tuple_slots = [(n * 7) % slots for n in range(400)]
    shares = per_destination_columns(tuple_slots, route, [list(range(400)), [str(n) for n in range(400)]])
    assert sorted(task for task, _, _ in shares) == sorted(set(owners[s] for s in tuple_slots))
    for task, (ns, strs), owned in shares:
        assert owned and ns == [n for n in range(400) if owners[tuple_slots[n]] == task] and strs == list(map(str, ns))
    ((task, cols, owned),) = per_destination_columns([0] * 5, route, [list(range(5))])
    assert (task, cols, owned) == (10, [list(range(5))], False), "all to one task: the columns as they are"


def per_destination(inst):
    """{dest: [(stream, values), ...]} of what ``inst`` sent, the largest frame's tuple count, and
    how many runs came as columns."""
    inst.flush_all()
    out: dict = {}
    largest = columnar = 0
    for f in FrameReader().feed(bytes(inst.out)):
        runs = msgpack.unpackb(f[DATA_HEADER_SIZE:])[1]
        count = 0
        for run in runs:
            if len(run) == 4:
                columnar += 1
                assert all(len(col) == run[3] for col in run[1])
                values = [list(v) for v in zip(*run[1])]
            else:
                values = run[1]
            out.setdefault(frame_dest(f), []).extend((run[0], v) for v in values)
            count += len(values)
        largest = max(largest, count)
    inst.out.clear()
    return out, largest, columnar


@pytest.mark.parametrize("batch_size", [3, 1000])
def test_emit_columns_sends_what_emit_one_at_a_time_sends(batch_size):
    one, cols = Src(), Src()
    inst_one, _ = instance(build(Grouping.fields("key")), one, batch_size)
    inst_cols, _ = instance(build(Grouping.fields("key")), cols, batch_size)
    calls = [KEYS, [f"w{n % 7}" for n in range(50)], ["w1", 7, "new"]]
    n = 0
    for k, keys in enumerate(calls):
        stream = "side" if k == 1 else "default"
        ns = list(range(n, n + len(keys)))
        n += len(keys)
        for key, i in zip(keys, ns):
            one.emit([key, i], stream=stream)
        cols.emit_columns([keys, ns], stream=stream)
    sent_one, _, _ = per_destination(inst_one)
    sent_cols, largest, columnar = per_destination(inst_cols)
    assert sent_cols == sent_one and len(sent_one) > 1
    assert columnar > 0 and largest <= batch_size
    assert inst_cols.emit_count == inst_one.emit_count == n


def test_emit_columns_of_a_shuffled_or_global_stream_goes_whole_to_one_task_a_call():
    spout = Src()
    inst, sinks = instance(build(Grouping.SHUFFLE, par=3), spout)
    for start in range(0, 300, 100):
        spout.emit_columns([["k"] * 100, list(range(start, start + 100))])
    sent, _, columnar = per_destination(inst)
    assert sorted(sent) == sorted(sinks) and [len(v) for v in sent.values()] == [100, 100, 100]
    assert sorted(v[1] for vs in sent.values() for _s, v in vs) == list(range(300)) and columnar == 3


def test_bad_columns_are_refused_with_one_message_and_nothing_is_sent():
    spout = Src()
    inst, _ = instance(build(Grouping.fields("key")), spout)
    with pytest.raises(ValueError, match=r"different lengths \[2, 1\]"):
        spout.emit_columns([["a", "b"], [1]])
    with pytest.raises(ValueError, match="stream 'default' has 2 fields, got 1 columns"):
        spout.emit_columns([["a", "b"]])
    with pytest.raises(ValueError, match="2 tuples but 1 tup_ids"):
        spout.emit_columns([["a", "b"], [1, 2]], tup_ids=[1])
    assert per_destination(inst)[0] == {} and inst.emit_count == 0


def test_the_default_emit_columns_validates_and_emits_rows():
    class Recording(Bolt):
        outputs = ["key", "n"]

        def __init__(self):
            self.rows = []

        def emit_many(self, values_list, stream="default", anchors=None):
            self.rows.extend(values_list)

    bolt = Recording()
    bolt.emit_columns([["a", "b"], [1, 2]])
    assert bolt.rows == [["a", 1], ["b", 2]]
    with pytest.raises(ValueError, match="different lengths"):
        bolt.emit_columns([["a"], [1, 2]])


def test_a_batch_gives_rows_and_columns_whichever_it_came_as():
    source = TupleSource("c", "default", 1, ("word", "n"))
    as_rows, as_cols = TupleBatch([["a", 1], ["b", 2]], source), TupleBatch.of_columns([["a", "b"], [1, 2]], source)
    for batch in (as_rows, as_cols):
        assert batch.values == [["a", 1], ["b", 2]] and batch.columns == [["a", "b"], [1, 2]] and len(batch) == 2
        assert [t["word"] for t in batch] == ["a", "b"]
    assert TupleBatch([], source).columns == [[], []]


class ColumnMid(Mid):
    """Takes rows (``batch.values``), emits columns."""

    def process_batch(self, batch):
        words = [values[0].upper() for values in batch.values if values[0] != "skip"]
        self.emit_columns([words])


class ColumnOut(Out):
    """Takes columns."""

    def process_batch(self, batch):
        self.seen.append(list(batch.columns[0]))
        self.roots.append(batch.roots)


def words_columns_frame(words, spans=()):
    """A DATA frame from a_src to b_mid with ``words`` as one columnar run."""
    return data_frame(MID, msgpack.packb([SRC, [["default", [list(words)], list(spans), len(words)]], 0]), len(words))


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast-path-on", "fast-path-off"])
@pytest.mark.parametrize("consumer", [ColumnOut, BatchOut, Out])
def test_a_mixed_chain_hands_columns_to_columns_batch_rows_and_process_consumers(consumer, fast_path):
    topo = topology()
    out = consumer()
    chain = Chain([make(topo, "b_mid", MID, ColumnMid(), chained_to=OUT, fast_path=fast_path),
                   make(topo, "c_out", OUT, out, fast_path=fast_path)])
    chain.on_frame(plan_frame(), 0.0)
    chain.on_frame(words_columns_frame(["a", "skip", "b"]), 0.0)  # received as columns, read as rows
    got = out.seen if consumer is not Out else [[w for *_, w in out.seen]]
    assert got == [["A", "B"]]
    assert rows(chain)[OUT].execute_count == 2 and sent(chain)[DATA] == []


@pytest.mark.parametrize("consumer", [ColumnOut, Out])
def test_columns_across_processes_at_least_once_are_one_span_and_acked_exactly(consumer):
    """b_mid unchained emits columns to c_out (a frame of one columnar run, one span); c_out receives
    it and acks: the ack is the span's share, so the tree's XOR closes."""
    topo = topology("ATLEAST_ONCE")
    mid = make(topo, "b_mid", MID, ColumnMid())
    mid.on_frame(plan_frame(), 0.0)
    root = (SRC << TASK_SHIFT) | 0x1234
    mid.on_frame(words_frame_rows(["a", "b", "skip"], [0, root, 0x77]), 0.0)
    out_frames = sent(mid)
    ((dest, runs),) = out_frames[DATA]
    ((stream, columns, spans, n),) = runs
    assert (dest, stream, columns, n) == (OUT, "default", [["A", "B"]], 2)
    assert spans[0] == 0 and spans[1] == root and len(spans) == 3, "one span for the run"
    acks_mid = [x for _, acks, _ in out_frames[ACK] for x in acks]
    out = consumer()
    sink = make(topo, "c_out", OUT, out)
    sink.on_frame(plan_frame(), 0.0)
    sink.on_frame(data_frame(OUT, msgpack.packb([MID, runs, 0]), n), 0.0)
    acks_out = [x for _, acks, _ in sent(sink)[ACK] for x in acks]
    assert (out.seen if consumer is ColumnOut else [w for *_, w in out.seen]) == (
        [["A", "B"]] if consumer is ColumnOut else ["A", "B"])
    values = {}
    for acks in (acks_mid, acks_out):
        for r, v in zip(acks[::2], acks[1::2]):
            values[r] = values.get(r, 0) ^ v
    assert values == {root: 0x77}, "the span's shares cancel: what is left is the value the tree began with"


def words_frame_rows(words, spans):
    return data_frame(MID, msgpack.packb([SRC, [["default", [[w] for w in words], spans]], 0]), len(words))


class ColumnSrc(Spout):
    """Emits its words as one column, each with its word as id."""

    outputs = ["word"]

    def __init__(self, words):
        self.todo = list(words)
        self.acked, self.failed = [], []

    def next_tuple(self):
        if self.todo:
            words, self.todo = self.todo, []
            self.emit_columns([words], tup_ids=list(words))

    def ack(self, tup_id):
        self.acked.append(tup_id)

    def fail(self, tup_id):
        self.failed.append(tup_id)


class RowSrc(ColumnSrc):
    """The same words as rows, one ``emit_many`` with ids."""

    def next_tuple(self):
        if self.todo:
            words, self.todo = self.todo, []
            self.emit_many([[w] for w in words], tup_ids=list(words))


def frames_of(process, ftype):
    """The raw frames of type ``ftype`` that ``process`` sent (flushed); the rest are dropped."""
    process.flush_all()
    out = [bytes(f) for f in FrameReader().feed(bytes(process.out)) if f[4] == ftype]
    process.out.clear()
    return out


@pytest.mark.parametrize("source", [ColumnSrc, RowSrc])
@pytest.mark.parametrize("words, acked", [(["a", "b", "c"], True), (["a", "fail", "c"], False)])
def test_a_spout_s_columns_or_list_with_ids_across_processes_are_one_span_of_one_tree_for_all(source, words, acked):
    topo = topology("ATLEAST_ONCE")
    src = source(words)
    spout, mid, sink = make(topo, "a_src", SRC, src), make(topo, "b_mid", MID, Mid()), make(topo, "c_out", OUT, Out())
    for process in (spout, mid, sink):
        process.on_frame(plan_frame(), 0.0)
    spout.spout_burst()
    (data,) = frames_of(spout, DATA)
    ((stream, vals, spans, *n),) = msgpack.unpackb(data[DATA_HEADER_SIZE:])[1]
    assert (stream, vals, n) == (("default", [words], [3]) if source is ColumnSrc else
                                 ("default", [[w] for w in words], []))
    assert spans[0] == 0 and len(spans) == 3 and root_task(spans[1]) == SRC, "one span of one tree"
    assert src.acked == src.failed == [] and len(spout.tracker.trees) == 1 and len(spout.tracker) == 3
    mid.on_frame(data, 0.0)
    for frame in frames_of(mid, DATA):
        sink.on_frame(frame, 0.0)
    for frame in frames_of(mid, ACK) + frames_of(sink, ACK):
        spout.on_frame(frame, 0.0)
    if acked:
        assert src.acked == words and src.failed == [], "the tree's XOR closed: each of its tuples acked"
    else:
        assert src.failed == words and src.acked == [], "a failed tuple fails the tree: each of its tuples"
