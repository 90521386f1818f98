"""``WindowedBolt``: a bolt that sees its input a window at a time (Storm's ``BaseWindowedBolt``).

The rules are ``squall/window_state.py``'s ``Windower``; this is its shell on
the bolt API. At least once, a tuple is acked once the last window holding it
has been processed (Storm's rule), and what ``process_window`` emits is
anchored to every tuple of the window, so the bolt acks tuples itself
(``auto_ack = False``; it is therefore never fused behind its upstream in a
chain at least once). ``check_windowed`` is what ``build()`` checks.
"""
from __future__ import annotations

import functools
import logging
import time
from typing import Any, Iterable, Mapping, Optional, Sequence

from squall.component import Bolt, TopologyContext, Tuple
from squall.conf import Config
from squall.errors import TopologyError
from squall.idl import schema
from squall.importing import import_object
from squall.logical import component_config
from squall.metrics import CountMetric
from squall.stream import DEFAULT_STREAM
from squall.window import Window, WindowView
from squall.window_state import Fired, Incremental, Windower

log = logging.getLogger(__name__)
IDLE_KEY = "squall.window.idle.timeout.secs"


class WindowedBolt(Bolt):
    """Override ``process_window(window)``; declare ``window`` (a ``Window``).

    ``timestamp_field``: the input field holding each tuple's event time
    (seconds), or override ``timestamp(tup)`` to compute it (Storm's
    timestamp extractor); with neither, windows are in processing time. ``lag``: how late
    (seconds) a tuple may arrive in event time. ``late_stream``: a declared
    output stream that gets tuples later than the watermark (their values as
    received); without it they are dropped, acked and counted
    (``window.late.dropped``). ``watermark_fields``: input fields that split
    each upstream task into several watermark sources, e.g. ``("topic",
    "partition")`` after a ``KafkaSpout``, whose tasks interleave partitions:
    each partition then holds the watermark back on its own, a partition
    behind the others is not made late by them, and an idle one stops holding
    it after ``squall.window.idle.timeout.secs``. The incremental form: define ``reduce(acc, tup)``
    (``acc`` starts as ``initial()``, None unless overridden) and, for a
    sliding window, ``merge(a, b)``, which returns a new accumulator and leaves
    its arguments alone (a pane's accumulator is merged into several windows);
    the window then holds one accumulator per pane (a slide, docs/windows.md), and ``window.value`` is
    the window's.

    Do not override ``process`` or ``process_tick``: they feed the windows.
    """

    window: Optional[Window] = None
    timestamp_field: Optional[str] = None
    lag: float = 0.0
    late_stream: Optional[str] = None
    watermark_fields: Sequence[str] = ()
    auto_ack = False  # a tuple is acked when its last window has been processed

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's own ``initialize`` runs after the windows are set up (it need not call super)."""
        super().__init_subclass__(**kwargs)
        own = cls.initialize
        if own is not WindowedBolt.initialize and not getattr(own, "_sets_up_windows", False):
            @functools.wraps(own)
            def initialize(self: "WindowedBolt", config: Mapping[str, object], context: TopologyContext) -> None:
                self._set_up_windows(config, context)
                own(self, config, context)

            initialize._sets_up_windows = True  # type: ignore[attr-defined]
            cls.initialize = initialize  # type: ignore[method-assign]

    def initialize(self, config: Mapping[str, object], context: TopologyContext) -> None:
        self._set_up_windows(config, context)

    def _set_up_windows(self, config: Mapping[str, object], context: TopologyContext) -> None:
        if "_windower" in self.__dict__:
            return  # a subclass's initialize called super().initialize()
        cls = type(self)
        self._context = context
        self._windower = Windower(
            cls.window, timestamped=event_time(cls), lag=float(cls.lag),
            idle_timeout=config.get(IDLE_KEY), incremental=incremental_form(self),
            keep_tuples=config.get("topology.reliability.mode") == "ATLEAST_ONCE",
        )
        self._expect_upstream()
        self._firing: Optional[Fired] = None
        self._late_emitted = context.register_metric("window.late.emitted", CountMetric())
        self._late_dropped = context.register_metric("window.late.dropped", CountMetric())
        self._fired = context.register_metric("window.fired", CountMetric())

    def process_window(self, window: WindowView) -> None:
        """Handle one window: ``window.tuples``/``new``/``expired``/``start``/``end`` (``value``, incrementally)."""

    def timestamp(self, tup: Tuple) -> Optional[float]:
        """The tuple's event time in seconds: its ``timestamp_field`` (None: processing time)."""
        field = type(self).timestamp_field
        if field is None:
            return None
        ts = tup[field]
        if ts.__class__ is not float and (isinstance(ts, bool) or not isinstance(ts, (int, float))):
            raise TypeError(f"{type(self).__name__}: timestamp_field {field!r} of a tuple from "
                            f"{tup.component}/{tup.stream} is {ts!r}, not a number of seconds")
        return ts

    def initial(self) -> Any:
        """The incremental form's empty accumulator (each slide's starts as this)."""
        return None

    # the shell ----------------------------------------------------------------------
    def process(self, tup: Tuple) -> None:
        fields = type(self).watermark_fields
        source = (tup.task, *[tup[f] for f in fields]) if fields else tup.task
        late, fired = self._windower.on_tuple(tup, self.timestamp(tup), source, time.time(), time.monotonic())
        if late:
            self._late(tup)
        self._run(fired)

    def process_tick(self, tup: Tuple) -> None:
        self._expect_upstream()
        self._run(self._windower.on_tick(time.time()))

    def emit(self, values: Sequence[object], stream: str = DEFAULT_STREAM, anchors: Optional[Iterable[Tuple]] = None,
             direct_task: Optional[int] = None) -> tuple:
        """Inside ``process_window``, anchored to every tuple of the window unless ``anchors`` says otherwise."""
        if anchors is None and self._firing is not None:
            anchors = self._firing.anchors
        return super().emit(values, stream, anchors, direct_task)

    def emit_many(self, values_list: Sequence[Sequence[object]], stream: str = DEFAULT_STREAM,
                  anchors: Optional[Iterable[Tuple]] = None) -> None:
        """Each through ``emit`` (anchored as it anchors)."""
        for values in values_list:
            self.emit(values, stream, anchors)

    def _run(self, fired: list) -> None:
        for f in fired:
            self._firing = f
            try:
                self.process_window(f.view)
            except Exception:
                if not self.auto_fail:
                    raise
                log.exception("task %d: process_window() raised; the window's tuples fail and are replayed",
                              self._context.get_task_id())
                for t in f.anchors:
                    self.fail(t)
                continue
            finally:
                self._firing = None
            self._fired.incr()
            for t in f.released:
                self.ack(t)

    def _late(self, tup: Tuple) -> None:
        if self.late_stream is not None:
            super().emit(tup.values, self.late_stream, [tup])
            self._late_emitted.incr()
        else:
            self._late_dropped.incr()
        self.ack(tup)  # never replayed (STORM-1859): a replay would be as late

    def _expect_upstream(self) -> None:
        context = self._context
        tasks = [t for component, _ in context.get_this_sources() for t in context.get_component_tasks(component)]
        self._windower.expect(tasks, time.monotonic())


def event_time(cls: type) -> bool:
    """Whether ``cls`` windows by event time (a ``timestamp_field``, or its own ``timestamp``)."""
    return cls.timestamp_field is not None or cls.timestamp is not WindowedBolt.timestamp


def incremental_form(bolt: Any) -> Optional[Incremental]:
    """The bolt's ``reduce``/``merge``/``initial``, if it has ``reduce``."""
    reduce = getattr(bolt, "reduce", None)
    if reduce is None:
        return None
    return Incremental(reduce, getattr(bolt, "merge", None), bolt.initial)


def check_windowed(cls: type, where: str, config: Mapping[str, object], input_fields: list,
                   outputs: Mapping[str, object]) -> Optional[float]:
    """``build()``'s checks of a ``WindowedBolt`` subclass ``cls``; returns the tick frequency it needs, else
    None: processing-time windows fire on ticks; in event time a tick (each second) only refreshes the
    upstream tasks the watermark waits for, after a plan change. ``config``: the component's resolved config;
    ``input_fields``: ``(component/stream, fields)`` of each input; ``outputs``: its declared streams."""
    name = cls.__name__
    window = cls.window
    if not isinstance(window, Window):
        raise TopologyError(f"{where}.class: {name}.window must be a squall.Window (Window.tumbling(...) or "
                            f"Window.sliding(...)), got {window!r}")
    if cls.process_window is WindowedBolt.process_window:
        raise TopologyError(f"{where}.class: {name} must override process_window(self, window)")
    for method in ("process", "process_tick"):
        if getattr(cls, method) is not getattr(WindowedBolt, method):
            raise TopologyError(f"{where}.class: {name} overrides {method}(), which feeds its windows; "
                                "put the work in process_window(self, window)")
    if getattr(cls, "reduce", None) is not None and window.size > 1 and getattr(cls, "merge", None) is None:
        raise TopologyError(f"{where}.class: {name} has reduce(acc, tup) and a {window.describe()} window: it also "
                            "needs merge(a, b), which joins the accumulators of a window's slides")
    lag = cls.lag
    if isinstance(lag, bool) or not isinstance(lag, (int, float)) or lag < 0:
        raise TopologyError(f"{where}.class: {name}.lag must be a number of seconds >= 0, got {lag!r}")
    field = cls.timestamp_field
    timed = event_time(cls)
    if timed and window.by_count:
        raise TopologyError(f"{where}.class: {name} has event time (timestamp_field or timestamp()) and a "
                            f"{window.describe()} window: count windows count tuples as they arrive; event time "
                            "needs a duration window")
    if cls.combine is not None and (timed or window.by_count):
        raise TopologyError(f"{where}.class: {name} has combine() and {'event time' if timed else 'a count window'}: "
                            f"{'a partial has no one timestamp' if timed else 'a partial would count as one tuple'}; "
                            "combine only into a processing-time duration window")
    if field is not None:
        for source, fields in input_fields:
            if field not in fields:
                raise TopologyError(f"{where}.class: {name}.timestamp_field is {field!r}, but input stream {source} "
                                    f"declares {list(fields)}")
    if lag and not timed:
        raise TopologyError(f"{where}.class: {name}.lag without timestamp_field: only event time has late tuples")
    sub = cls.watermark_fields
    if isinstance(sub, str) or not all(isinstance(f, str) for f in sub):
        raise TopologyError(f"{where}.class: {name}.watermark_fields must be a tuple of field names, got {sub!r}")
    if sub and not timed:
        raise TopologyError(f"{where}.class: {name}.watermark_fields without event time (timestamp_field or "
                            "timestamp()): only event time has a watermark")
    for f in sub:
        for source, fields in input_fields:
            if f not in fields:
                raise TopologyError(f"{where}.class: {name}.watermark_fields names {f!r}, but input stream {source} "
                                    f"declares {list(fields)}")
    if cls.late_stream is not None:
        if not timed:
            raise TopologyError(f"{where}.class: {name}.late_stream without timestamp_field: only event time has "
                                "late tuples")
        if cls.late_stream not in outputs:
            raise TopologyError(f"{where}.outputs: {name}.late_stream is {cls.late_stream!r}, which {name} does not "
                                f"declare (declared: {', '.join(sorted(outputs)) or 'none'})")
        width = len(outputs[cls.late_stream].fields)
        for source, fields in input_fields:
            if len(fields) != width:
                raise TopologyError(f"{where}.outputs: late stream {cls.late_stream!r} has {width} fields, but late "
                             f"tuples from {source} have {len(fields)} ({list(fields)})")
    if config["topology.reliability.mode"] == "ATLEAST_ONCE":
        _check_completes(window, float(lag), where, name, config)
    if window.by_count:
        return None
    return 1.0 if timed else min(1.0, max(0.01, window.every / 10))


def check_windows_complete(topology: schema.Topology, base: Optional[Config]) -> None:
    """At least once, the checks of ``_check_completes`` against the configuration a run really gets
    (``--config-property`` and the cluster file included; ``build()`` saw only the topology's)."""
    for c in topology.components:
        cls = import_object(c.class_name)
        if not (isinstance(cls, type) and issubclass(cls, WindowedBolt)):
            continue
        config = component_config(topology, c.name, base)
        if config["topology.reliability.mode"] == "ATLEAST_ONCE":
            _check_completes(cls.window, float(cls.lag), f"components.{c.name}", cls.__name__, config)


def _check_completes(window: Window, lag: float, where: str, name: str, config: Mapping[str, object]) -> None:
    """At least once, a tuple waits for its last window (Storm's bound: length + slide, plus the lag) before
    it is acked; past ``topology.message.timeout.secs`` (or, counting tuples, past
    ``topology.max.spout.pending`` in flight) it would time out and replay for ever."""
    timeout = config["topology.message.timeout.secs"]
    pending = config["topology.max.spout.pending"]
    keys = (f"topology.message.timeout.secs is {timeout:g}, topology.max.spout.pending is "
            f"{'unlimited' if pending is None else pending}")
    if window.by_count:
        need = window.length + window.every
        if pending is not None and need > pending:
            raise TopologyError(f"{where}: {name}'s {window.describe()} window holds up to {need:g} tuples (length + "
                                f"slide) un-acked, but {keys}: the window could never complete; raise "
                                "topology.max.spout.pending or shorten the window")
        return
    need = window.length + window.every + lag
    if need > timeout:
        raise TopologyError(f"{where}: {name}'s {window.describe()} window holds a tuple up to {need:g} s (length + "
                            f"slide + lag) before acking it, but {keys}: its tree would time out and replay; raise "
                            "topology.message.timeout.secs or shorten the window")

