"""The bolt's driver at most once: ``process`` over the tuples of each DATA frame, ticks, and the
``consumed`` reports its stream manager bounds its queue with. At least once is
``ReliableBoltInstance`` (``reliable.py``), built on this."""
from __future__ import annotations

import time
from typing import Optional

import msgpack

from squall.component import SYSTEM_COMPONENT, TICK_STREAM, Tuple, TupleSource
from squall.runtime.instance.state import InstanceState
from squall.runtime.instance.tuples import process_columns, run_delivery
from squall.runtime.protocol import DATA_HEADER_SIZE, control_frame, frame_count


class BoltInstance(InstanceState):
    def init_role(self) -> None:
        self.consumed = 0  # tuples processed since the last report to the stream manager
        self.sources: dict = {}  # (source task, stream) -> TupleSource
        self.batched = False  # its class has its own process_batch: runs go to it whole
        self.process_run = run_delivery()  # a received run's rows through process (or process_batch)

    def runtime_class(self, cls: type) -> type:
        from squall.component import Bolt

        self.batched = getattr(cls, "process_batch", Bolt.process_batch) is not Bolt.process_batch
        return super().runtime_class(cls)

    def on_tasks(self, component_tasks: dict) -> None:
        self.sources.clear()

    def source(self, src: int, comp: str, stream: str) -> TupleSource:
        """What tuples from task ``src`` of ``comp`` on ``stream`` say of where they come from."""
        source = self.sources.get((src, stream))
        if source is None:
            source = self.sources[src, stream] = TupleSource(comp, stream, src, self.fields_of.get((comp, stream), ()))
        return source

    def on_data(self, frame_bytes: bytes, arrived: float) -> Optional[int]:
        """Run the bolt over one DATA frame; returns the tuples executed.

        None when the sending task is newer than this instance's physical plan
        (a scale-up reached the sender first): the caller keeps the frame until
        a plan names its sender, so every tuple gets its component and fields.
        """
        src, runs, epoch = msgpack.unpackb(memoryview(frame_bytes)[DATA_HEADER_SIZE:], raw=False)
        checkpoint = self.checkpoint
        if checkpoint is not None:
            if epoch != self.epoch:
                checkpoint.stale_frames += 1
                self.discarded([frame_bytes])
                return 0
            if checkpoint.holds(src):
                checkpoint.hold(frame_bytes)  # not consumed until handled: a long alignment backpressures
                return 0
        comp = self.task_component.get(src)
        if comp is None:
            return None
        return self.on_runs(src, comp, runs, arrived)

    def on_runs(self, src: int, comp: str, runs: list, arrived: float) -> int:
        """The runs ``[stream, values]`` (or columnar, ``[stream, columns, spans, n]``) of one frame
        from task ``src``: each tuple through process(), or each run through process_batch()."""
        component, batched, process_run = self.component, self.batched, self.process_run
        clock = time.perf_counter
        done = 0
        t_start = clock()
        for run in runs:
            if len(run) == 4:
                process_columns(component, batched, run[1], self.source(src, comp, run[0]))
                done += run[3]
            else:
                process_run(component, batched, run[1], self.source(src, comp, run[0]))
                done += len(run[1])
        self.account(done, t_start, clock(), arrived)
        return done

    def account(self, done: int, t_start: float, t_end: float, arrived: float) -> None:
        """Counters of one frame's ``done`` tuples, processed from ``t_start`` to ``t_end``."""
        self.execute_count += done
        self.execute_calls += done
        self.execute_time += t_end - t_start
        # process latency: arrival of the batch to the end of each tuple, averaged
        self.process_calls += done
        self.process_time += done * ((t_end - t_start) / 2 + (t_start - arrived))
        self.consumed += done

    def account_delivered(self, calls: int, seconds: float) -> None:
        """Counters of ``calls`` tuples handed to this task by call (a chain's edge), which took about
        ``seconds`` (sampled): its executes, as received tuples' are (``account``)."""
        self.execute_count += calls
        self.execute_calls += calls
        self.execute_time += seconds
        self.process_calls += calls
        self.process_time += seconds

    def discarded(self, frames: list) -> None:
        """Their tuples count as consumed: the stream manager's bound on this task's queue counts them."""
        self.consumed += sum(map(frame_count, frames))

    def tick(self) -> None:
        self.component.process_tick(Tuple(None, SYSTEM_COMPONENT, TICK_STREAM, -1, [], ()))

    def flush_role(self) -> None:
        if self.consumed:
            self.out += control_frame(consumed=self.consumed)
            self.consumed = 0
