"""The most two Python processes can make of a keyed exchange: the bound issue 30's targets meet.

    .venv/bin/python bench/exchange_bound.py [--seconds 5] [--rounds 3] [--api batch|tuple] [--codec marshal|msgpack]
                                             [--shapes 1/1,2/2] [--squall]

The batch-API word count of ``bench/exchange.py`` (wc_bench_batch.py's user code: split makes a
``[word, stamp]`` list a word, count adds each word to a dict), without Squall:

- **fused**: one process splits and counts each batch of 100 sentences;
- **exchange 2/2**: two processes split (each makes its own sentences: no spout process) and send
  each word to one of two counting processes by its key, over a pipe each, in frames of up to 1,000
  rows (``--shapes``: also 1/1, one process splitting and one counting: a pipeline, a core each).
  Each word is cut out by destination at C speed (one byte a row, ``bytes.translate`` and
  ``compress``), the frame serialised with ``--codec`` (``marshal``: the fastest serialiser of the
  standard library; ``msgpack``: what Squall sends), read and deserialised by its counter, which
  counts it as ``BatchCount`` does.

Exchange 2/2 leaves out all that Squall adds to the exchange (a stream manager between the
processes, a spout process, metrics, acking, backpressure, a frame header), so its words/s bound
what a keyed exchange between Python processes can reach with this user code on this machine.
The ratio exchange 2/2 / fused is the bound on issue 30's "batch 1/2/2 / batch fused 1/1/1".

``--api tuple`` models the tuple API at its cheapest instead: split calls ``emit(values)`` a word
and count is called ``process(values)`` a word. Fused, ``emit`` is count's ``process`` (a chain's
edge: the call itself); across processes, ``emit`` appends the word to its destination's frame.

``--squall`` runs Squall's own fused 1/1/1 and 1/2/2 of that API in each round too (as
``bench/exchange.py`` runs them), and prints each against the bound's runs of the same round.
"""
from __future__ import annotations

import argparse
import marshal
import os
import statistics
import struct
import sys
import time
from itertools import compress
from operator import itemgetter
from typing import Callable, Dict, List, Tuple

import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "topologies"))

import exchange as exchange_bench  # noqa: E402
import wordcount_e2e  # noqa: E402
from wc_bench import sentence  # noqa: E402

TOPOLOGIES = os.path.join(HERE, "topologies")

FRAME_ROWS = 1000
BATCH_SENTENCES = 100
HEADER = struct.Struct("<I")
CODECS: Dict[str, Tuple[Callable[[object], bytes], Callable[[bytes], object]]] = {
    "marshal": (marshal.dumps, marshal.loads),
    "msgpack": (msgpack.packb, msgpack.unpackb),
}


def batches() -> List[List[list]]:
    """The spout's batches: 100 ``[sentence, stamp]`` rows each, over its 1,000 sentences."""
    sentences = [sentence(i) for i in range(1000)]
    now = time.time()
    return [[[sentences[(i + k) % 1000], now] for k in range(BATCH_SENTENCES)] for i in range(0, 1000, BATCH_SENTENCES)]


def split(batch: List[list]) -> List[list]:
    """wc_bench_batch.BatchSplit's user code."""
    return [[word, t] for sentence_, t in batch for word in sentence_.split()]


def count(counts: Dict[str, int], rows: List[list]) -> None:
    """wc_bench_batch.BatchCount's user code (without its latency sampling)."""
    for word, _stamp in rows:
        counts[word] = counts.get(word, 0) + 1


def process_into(counts: Dict[str, int]) -> Callable[[list], None]:
    """The tuple API's count: ``process(values)``."""
    def process(values: list) -> None:
        word = values[0]
        counts[word] = counts.get(word, 0) + 1

    return process


def split_each(batch: List[list], emit: Callable[[list], None]) -> None:
    """The tuple API's split: an ``emit`` a word."""
    for sentence_, t in batch:
        for word in sentence_.split():
            emit([word, t])


def fused(seconds: float, api: str) -> float:
    """Words/s of split and count in one process."""
    counts: Dict[str, int] = {}
    emit = process_into(counts)
    work = batches()
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for batch in work:
            if api == "batch":
                count(counts, split(batch))
            else:
                split_each(batch, emit)
    return sum(counts.values()) / (time.perf_counter() - start)


def write_frame(fd: int, payload: bytes) -> None:
    view = memoryview(HEADER.pack(len(payload)) + payload)
    while view:
        view = view[os.write(fd, view):]


def read_exact(fd: int, n: int) -> bytes:
    parts = []
    while n:
        part = os.read(fd, n)
        if not part:
            raise EOFError
        parts.append(part)
        n -= len(part)
    return b"".join(parts)


def splitter(outs: List[int], codec: str, deadline: float, api: str) -> None:
    """Split batches and send each word to its counter, until ``deadline``; then close the pipes."""
    dumps = CODECS[codec][0]
    work = batches()
    slot = {word: hash(word) % len(outs) for batch in work for row in split(batch) for word in row[:1]}
    tables = [bytes(int(i == d) for i in range(256)) for d in range(len(outs))]
    pending: List[List[list]] = [[] for _ in outs]
    key = itemgetter(0)
    by_word = {word: (pending[d], outs[d]) for word, d in slot.items()}

    def emit(values: list) -> None:
        share, fd = by_word[values[0]]
        share.append(values)
        if len(share) >= FRAME_ROWS:
            write_frame(fd, dumps(share))
            share.clear()

    while time.perf_counter() < deadline:
        for batch in work:
            if api == "tuple":
                split_each(batch, emit)
                continue
            rows = split(batch)
            code = bytes(map(slot.__getitem__, map(key, rows)))
            for d, table in enumerate(tables):
                share = pending[d]
                share += compress(rows, code.translate(table))
                if len(share) >= FRAME_ROWS:
                    write_frame(outs[d], dumps(share))
                    share.clear()
    for fd in outs:
        os.close(fd)


def counter(ins: List[int], codec: str, report: int, api: str) -> None:
    """Count what the splitters send until each closes its pipe; report the words counted."""
    import selectors

    loads = CODECS[codec][1]
    counts: Dict[str, int] = {}
    process = process_into(counts)
    words = 0
    sel = selectors.DefaultSelector()
    for fd in ins:
        sel.register(fd, selectors.EVENT_READ)
    open_ = len(ins)
    while open_:
        for key, _ in sel.select():
            try:
                n = HEADER.unpack(read_exact(key.fd, HEADER.size))[0]
                rows = loads(read_exact(key.fd, n))
            except EOFError:
                sel.unregister(key.fd)
                open_ -= 1
                continue
            if api == "batch":
                count(counts, rows)
            else:
                for values in rows:
                    process(values)
            words += len(rows)
    os.write(report, HEADER.pack(words))


def fork(keep: List[int], every: List[int], run: Callable[[], None]) -> int:
    """A child process that closes the pipe ends of ``every`` but ``keep`` (a pipe's reader sees its
    end once its writers close theirs), runs ``run`` and exits; its pid."""
    pid = os.fork()
    if pid == 0:
        for fd in every:
            if fd not in keep:
                os.close(fd)
        run()
        os._exit(0)
    return pid


def exchange(seconds: float, codec: str, api: str, splitters: int = 2, counters: int = 2) -> float:
    """Words/s counted by ``counters`` processes fed by ``splitters`` processes for ``seconds``."""
    pipes = [[os.pipe() for _ in range(counters)] for _ in range(splitters)]  # [splitter][counter]
    report_r, report_w = os.pipe()
    start = time.perf_counter()
    deadline = start + seconds
    every = [fd for row in pipes for pair in row for fd in pair]
    ins = [[pipes[s][c][0] for s in range(splitters)] for c in range(counters)]
    outs = [[pipes[s][c][1] for c in range(counters)] for s in range(splitters)]
    children = [fork(ins[c], every, lambda c=c: counter(ins[c], codec, report_w, api)) for c in range(counters)]
    children += [fork(outs[s], every, lambda s=s: splitter(outs[s], codec, deadline, api)) for s in range(splitters)]
    for fd in every:
        os.close(fd)
    for pid in children:
        os.waitpid(pid, 0)
    elapsed = time.perf_counter() - start
    words = sum(HEADER.unpack(read_exact(report_r, HEADER.size))[0] for _ in range(counters))
    return words / elapsed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--codec", choices=sorted(CODECS), action="append",
                   help="serialiser of the exchange (repeatable; default: both)")
    p.add_argument("--api", choices=("batch", "tuple"), default="batch")
    p.add_argument("--squall", action="store_true", help="Squall's fused 1/1/1 and 1/2/2 in each round too")
    p.add_argument("--shapes", default="1/1,2/2", help="splitters/counters, comma-separated (default: 1/1,2/2)")
    args = p.parse_args()
    codecs = args.codec or sorted(CODECS)
    shapes = [tuple(int(n) for n in shape.split("/")) for shape in args.shapes.split(",")]
    ratios: Dict[str, List[float]] = {f"{s}/{c} {codec}": [] for s, c in shapes for codec in codecs}
    for r in range(args.rounds):
        base = fused(args.seconds, args.api)
        line = [f"fused {base / 1e3:,.0f}k"]
        for splitters, counters in shapes:
            for codec in codecs:
                words = exchange(args.seconds, codec, args.api, splitters, counters)
                ratios[f"{splitters}/{counters} {codec}"].append(words / base)
                line.append(f"{splitters}/{counters} {codec} {words / 1e3:,.0f}k ({words / base:.2f}x)")
        if args.squall:
            for shape in ("fused 1/1/1", "1/2/2"):
                name = f"{args.api} {shape}"
                file, *props = exchange_bench.RUNS[name]
                words = wordcount_e2e.run(args.seconds, 4.0, *props,
                                          topology=os.path.join(TOPOLOGIES, file))["words_per_sec"]
                ratios.setdefault(f"Squall {shape}", []).append(words / base)
                line.append(f"Squall {shape} {words / 1e3:,.0f}k ({words / base:.2f}x)")
        print(f"round {r + 1} ({args.api} API, {os.cpu_count()} cores): " + ", ".join(line), flush=True)
    target = "batch 1/2/2: >= 1.2x" if args.api == "batch" else "tuple 1/2/2: >= 1.3x"
    print(f"against the plain fused loop, {args.api} API, median over rounds (issue 30's target for Squall's {target}"
          " Squall's fused 1/1/1):")
    for what, rs in ratios.items():
        print(f"  {what:<18} {statistics.median(rs):.2f}x (rounds {min(rs):.2f}x-{max(rs):.2f}x)")
    if args.squall:
        per_round = [w / f for w, f in zip(ratios["Squall 1/2/2"], ratios["Squall fused 1/1/1"])]
        print(f"  Squall 1/2/2 / Squall fused 1/1/1: {statistics.median(per_round):.2f}x")


if __name__ == "__main__":
    main()
