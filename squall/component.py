"""The user-facing component API: Spout, Bolt, Tuple and TopologyContext.

heronpy-shaped. The runtime attaches a collector to each component before
``initialize``; emits, acks and fails go through it.
"""
from __future__ import annotations

import logging
from functools import cached_property
from typing import Any, Callable, Iterable, List, Mapping, Optional, Protocol, Sequence, Union

from squall.metrics import Metric
from squall.spec import ComponentSpec
from squall.stream import DEFAULT_STREAM, Stream

SYSTEM_COMPONENT = "__system"
TICK_STREAM = "__tick"
TICK_FREQ_KEY = "topology.tick.tuple.freq.secs"  # a component may set its own (Storm's per-component ticks)


class TupleSource:
    """Where tuples come from: one emitting task's stream. Shared by its tuples."""

    __slots__ = ("component", "stream", "task", "fields", "index")

    def __init__(self, component: str, stream: str, task: int, fields: Sequence[str] = ()):
        self.component = component
        self.stream = stream
        self.task = task
        self.fields = tuple(fields)
        self.index = {name: i for i, name in enumerate(self.fields)}


class _FromSource:
    """Where a tuple or a batch comes from, read off its ``TupleSource``."""

    __slots__ = ()
    source: TupleSource

    @property
    def component(self) -> str:
        return self.source.component

    @property
    def stream(self) -> str:
        return self.source.stream

    @property
    def task(self) -> int:
        return self.source.task

    @property
    def fields(self) -> tuple:
        return self.source.fields


class Tuple(_FromSource):
    """One tuple as a bolt receives it.

    Values are reached by position (``tup[0]``), by field name (``tup["word"]``)
    or as the list ``tup.values``. ``component``, ``stream`` and ``task`` say
    where it came from: the emitting component, its stream and its task id.

    A tuple holds its values and its ``TupleSource``; ``id`` and ``roots`` are
    the at-least-once bookkeeping. There is no ``__getattr__`` (no ``tup.word``):
    it would make every attribute read, ``tup.values`` included, take CPython's
    slow path, a per-tuple cost of every bolt.
    """

    __slots__ = ("values", "source", "id", "roots")

    def __init__(
        self,
        id: object,
        component: str,
        stream: str,
        task: int,
        values: Sequence[object],
        fields: Sequence[str] = (),
        roots: object = None,
    ):
        self.id = id
        self.values = values
        self.source = TupleSource(component, stream, task, fields)
        self.roots = roots

    def __getitem__(self, key: Union[int, str]) -> Any:
        if key.__class__ is str:
            try:
                return self.values[self.source.index[key]]
            except KeyError:
                raise KeyError(f"stream {self.component}/{self.stream} has no field {key!r}") from None
        return self.values[key]

    def __len__(self) -> int:
        return len(self.values)

    @property
    def is_tick(self) -> bool:
        return self.component == SYSTEM_COMPONENT and self.stream == TICK_STREAM

    def __repr__(self) -> str:
        return f"Tuple({self.component}/{self.stream} task={self.task} values={list(self.values)!r})"


class TupleBatch(_FromSource):
    """Tuples of one stream from one task, in arrival order: what ``Bolt.process_batch`` gets.

    ``values`` is the list of their values (``for word, count in batch.values``
    is the cheapest way through rows); ``columns`` is a list per declared field
    (``Counter.update(batch.columns[0])``: no Python object a tuple). Each is
    built from the other on first use, so a batch that came as rows (``emit``,
    ``emit_many``) has columns and one that came as columns (``emit_columns``)
    has rows. Iterating gives ``Tuple`` objects. At least once they are in the
    same trees (``roots``): acked together when ``process_batch`` returns,
    failed together (``self.fail(batch)`` or a raise under ``auto_fail``).
    """

    __slots__ = ("_values", "_columns", "source", "roots")

    def __init__(self, values: list, source: TupleSource, roots: object = None):
        self._values: Optional[list] = values
        self._columns: Optional[List[list]] = None
        self.source = source
        self.roots = roots

    @classmethod
    def of_columns(cls, columns: List[list], source: TupleSource, roots: object = None) -> "TupleBatch":
        """A batch of the tuples whose field ``i`` is ``columns[i]`` (equal lengths, one a field)."""
        batch = cls.__new__(cls)
        batch._values = None
        batch._columns = columns
        batch.source = source
        batch.roots = roots
        return batch

    @property
    def values(self) -> list:
        if self._values is None:
            self._values = list(map(list, zip(*self._columns)))  # type: ignore[misc]
        return self._values

    @property
    def columns(self) -> List[list]:
        if self._columns is None:
            rows = self._values
            self._columns = [list(col) for col in zip(*rows)] or [[] for _ in self.source.fields]  # type: ignore[misc]
        return self._columns

    def __len__(self) -> int:
        if self._values is not None:
            return len(self._values)
        return len(self._columns[0]) if self._columns else 0

    def __iter__(self) -> Any:
        for values in self.values:
            tup = object.__new__(Tuple)
            tup.values, tup.source, tup.id, tup.roots = values, self.source, None, self.roots
            yield tup

    def __repr__(self) -> str:
        return f"TupleBatch({self.component}/{self.stream} task={self.task}, {len(self)} tuples)"


def column_count(columns: Sequence[Sequence[object]], stream: str, fields: Optional[int]) -> int:
    """The tuples in ``columns`` (a list a field of stream ``stream``, which has ``fields`` fields,
    None: not known here); ``ValueError`` naming what is wrong when they are not ``fields`` lists of
    one length."""
    if fields is not None and len(columns) != fields:
        raise ValueError(f"emit_columns: stream {stream!r} has {fields} fields, got {len(columns)} columns")
    lengths = set(map(len, columns))
    if len(lengths) > 1:
        raise ValueError(f"emit_columns: stream {stream!r} got columns of different lengths "
                         f"{[len(c) for c in columns]} (one value a tuple in each)")
    return lengths.pop() if lengths else 0


def rows_of(columns: Sequence[Sequence[object]]) -> list:
    """The values of each tuple of ``columns`` (one list a field), as ``emit_many`` takes them."""
    return list(map(list, zip(*columns)))


class Collector(Protocol):
    """What the runtime gives a component to send through."""

    def emit(
        self,
        values: Sequence[object],
        stream: str,
        tup_id: object,
        anchors: Optional[Iterable[Tuple]],
        direct_task: Optional[int],
    ) -> tuple:
        ...

    def ack(self, tup: Tuple) -> None:
        ...

    def fail(self, tup: Tuple) -> None:
        ...

    def report_error(self, where: str, error: str) -> None:
        ...


class _Unattached:
    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(
            "this component is not running: emit/ack/fail work once the Squall runtime "
            "(or squall.testing) has attached it"
        )


class TopologyContext:
    """What a running task knows about itself and its topology."""

    def __init__(
        self,
        topology_name: str,
        task_id: int,
        component: str,
        component_tasks: Mapping[str, Sequence[int]],
        config: Mapping[str, object],
        sources: Sequence[tuple] = (),
        files: Optional[Mapping[str, str]] = None,
    ):
        self.topology_name = topology_name
        self._task_id = task_id
        self._component = component
        self._component_tasks: dict = {}
        self.set_component_tasks(component_tasks)
        self._config = config
        self._sources = [tuple(s) for s in sources]
        self._files = files if files is not None else {}  # the runtime keeps it current (never copied)
        self.metrics: dict = {}

    def get_task_id(self) -> int:
        return self._task_id

    def get_component_id(self) -> str:
        return self._component

    def set_component_tasks(self, component_tasks: Mapping[str, Sequence[int]]) -> None:
        """The runtime's: the tasks of every component after a rescale."""
        self._component_tasks = {c: sorted(t) for c, t in component_tasks.items()}

    def get_component_tasks(self, component: str) -> list:
        """Task ids of ``component``, ascending."""
        try:
            return list(self._component_tasks[component])
        except KeyError:
            raise KeyError(f"topology {self.topology_name!r} has no component {component!r}") from None

    def get_this_sources(self) -> list:
        """The ``(component, stream)`` pairs this component takes as input (Storm's ``getThisSources``)."""
        return list(self._sources)

    def get_file(self, alias: str) -> str:
        """The local path of the version in force of the file shipped as ``alias`` (``squall submit
        --files PATH#ALIAS``; Storm's distributed cache). After ``squall update --files`` it returns
        the new version's path (``Component.on_file_update`` is called then). Read the file, do not
        write it: the path is shared by the container's tasks."""
        try:
            return self._files[alias]
        except KeyError:
            known = f"shipped: {', '.join(sorted(self._files))}" if self._files else "it ships none"
            raise KeyError(f"topology {self.topology_name!r} has no shipped file {alias!r} ({known}; "
                           f"squall submit --files PATH#ALIAS ships one)") from None

    def get_cluster_config(self) -> Mapping[str, Any]:
        """The resolved configuration of this component (all layers applied)."""
        return self._config

    def register_metric(self, name: str, metric: Metric, time_bucket_in_sec: Optional[float] = None) -> Metric:
        """Report ``metric`` every bucket (``topology.builtin.metrics.bucket.size.secs``
        unless ``time_bucket_in_sec`` is given)."""
        if not isinstance(metric, Metric):
            raise TypeError(f"register_metric({name!r}): expected a squall.metrics.Metric, got {metric!r}")
        if name in self.metrics:
            raise ValueError(f"metric {name!r} is already registered")
        self.metrics[name] = (metric, time_bucket_in_sec)
        return metric


class Component:
    """Shared by Spout and Bolt: declared outputs and the attached collector."""

    #: Field names of the default stream, or a list of ``Stream`` objects.
    outputs: Sequence[Union[str, Stream]] = ()

    _collector: Collector = _Unattached()  # type: ignore[assignment]

    def attach(self, collector: Collector) -> None:
        """The runtime's (or squall.testing's): where this component's emit/ack/fail/report_error go."""
        self._collector = collector

    @cached_property
    def logger(self) -> logging.Logger:
        """This component's logger, named after its class (``module.Class``): ``squall set-log-level`` sets
        its level by that name, or by its module's (the parent of the module's ``logging.getLogger(__name__)``).
        A component may assign its own."""
        return logging.getLogger(f"{type(self).__module__}.{type(self).__qualname__}")

    def initialize(self, config: Mapping[str, object], context: TopologyContext) -> None:
        """Called once in the task's process before any tuple."""

    def close(self) -> None:
        """Called when the task shuts down cleanly."""

    def on_file_update(self, alias: str, path: str) -> None:
        """A new version of the file shipped as ``alias`` (``squall update --files PATH#ALIAS``) is at
        ``path``; ``context.get_file(alias)`` returns it from now on. Called on the task's own thread,
        between tuples (never during ``process`` or ``next_tuple``), so a component may reload a lookup
        table here without a lock. The default does nothing: the component reads the new path when it
        next calls ``get_file``. An exception raised here is reported as the task's error; the task
        goes on."""

    def report_error(self, error: str, where: str = "") -> None:
        """Report a problem this component handled and goes on from (a broker that does not answer, a
        record it could not read): shown as its task's error by ``squall show``, the UI and the metrics,
        as an exception raised in its code would be, without stopping anything."""
        self._collector.report_error(where or type(self).__name__, error)

    @classmethod
    def check_config(cls, config: Mapping[str, object]) -> None:
        """Refuse a configuration this component cannot run with, without I/O: called with the component's
        config as its tasks will get it (every layer, ``--config-property`` too) by every command that loads
        a topology file (``squall validate``, ``pack``, ``submit``...), not by ``build()``, since a required
        key may come from the command line. Raise ``ValueError`` with one line naming the key and what was
        expected (a connector's keys: docs/connectors.md)."""

    @classmethod
    def preflight(cls, config: Mapping[str, object]) -> None:
        """Check what this component needs outside the topology before anything is launched (``squall
        submit``, ``--dry-run`` too): a broker that answers, a topic that exists, a path that can be
        written. Raise ``ValueError`` or ``OSError`` with one line naming what is wrong."""

    @classmethod
    def field_count(cls, stream: str) -> Optional[int]:
        """The fields of the declared output stream ``stream`` (None: not declared)."""
        return next((len(s.fields) for s in cls.declared_streams() if s.name == stream), None)

    @classmethod
    def declared_streams(cls) -> list:
        """The component's output streams as ``Stream`` objects."""
        outputs = cls.outputs
        if isinstance(outputs, (str, Stream)):
            outputs = [outputs]
        names = [o for o in outputs if isinstance(o, str)]
        streams = [o for o in outputs if isinstance(o, Stream)]
        if len(names) + len(streams) != len(outputs):
            bad = [o for o in outputs if not isinstance(o, (str, Stream))]
            raise ValueError(f"outputs must be field names or Stream objects, got {bad[0]!r}")
        if names:
            streams.insert(0, Stream(names))
        return streams


class Spout(Component):
    """A source of tuples. Override ``next_tuple`` (and ``ack``/``fail`` for reliability)."""

    def next_tuple(self) -> None:
        """Emit zero or more tuples; called repeatedly while the topology is active."""

    def ack(self, tup_id: object) -> None:
        """The tree of the tuple emitted with ``tup_id`` was fully processed."""

    def fail(self, tup_id: object) -> None:
        """The tree of the tuple emitted with ``tup_id`` failed or timed out."""

    def activate(self) -> None:
        """The topology was activated: ``next_tuple`` calls resume."""

    def deactivate(self) -> None:
        """The topology was deactivated: ``next_tuple`` is no longer called."""

    def on_backpressure(self, on: bool) -> None:
        """Backpressure began (``on``) or ended: ``next_tuple`` is not called meanwhile. A spout over an
        external source pauses its reads here (a Kafka consumer pauses its partitions)."""

    def emit(
        self,
        values: Sequence[object],
        tup_id: object = None,
        stream: str = DEFAULT_STREAM,
        direct_task: Optional[int] = None,
    ) -> tuple:
        """Emit a tuple; with ``tup_id`` (at-least-once) it is tracked and acked or failed.

        Returns the task ids it was sent to, as a tuple.
        """
        return self._collector.emit(values, stream, tup_id, None, direct_task)

    def emit_many(self, values_list: Sequence[Sequence[object]], tup_ids: Optional[Sequence[object]] = None,
                  stream: str = DEFAULT_STREAM) -> None:
        """Emit each of ``values_list`` in order (with the matching id of ``tup_ids``, at least once), as
        ``emit`` would: one call for all (in a chain, handed to the next task as one batch)."""
        if tup_ids is None:
            for values in values_list:
                self.emit(values, None, stream)
        else:
            if len(tup_ids) != len(values_list):
                raise ValueError(f"emit_many: {len(values_list)} values but {len(tup_ids)} tup_ids")
            for values, tup_id in zip(values_list, tup_ids):
                self.emit(values, tup_id, stream)

    def emit_columns(self, columns: Sequence[Sequence[object]], tup_ids: Optional[Sequence[object]] = None,
                     stream: str = DEFAULT_STREAM) -> None:
        """Emit the tuples whose field ``i`` is ``columns[i]`` (one list a declared field, equal
        lengths), in order, as ``emit_many`` would; across processes they travel as columns, not as
        a list a tuple, to a ``process_batch`` that reads ``batch.columns``."""
        column_count(columns, stream, self.field_count(stream))
        self.emit_many(rows_of(columns), tup_ids, stream)

    @classmethod
    def spec(cls, name: Optional[str] = None, par: int = 1, config: Optional[Mapping] = None) -> ComponentSpec:
        """A component spec for the class DSL (``class T(Topology): s = MySpout.spec()``)."""
        return ComponentSpec(name, "SPOUT", cls, par, None, config)


class Bolt(Component):
    """A transform or sink. Override ``process`` (and ``process_tick`` for ticks).

    At least once (``topology.reliability.mode: ATLEAST_ONCE``) a bolt follows
    streamparse's defaults, each a class attribute it can switch off:
    ``auto_anchor`` (an emit inside ``process`` is anchored to the tuple being
    processed), ``auto_ack`` (the tuple is acked when ``process`` returns) and
    ``auto_fail`` (it is failed when ``process`` raises, and the bolt goes on).
    A second ``ack``/``fail`` of a tuple is ignored.
    """

    auto_anchor = True
    auto_ack = True
    auto_fail = True
    #: seconds between the tick tuples a bolt needs whatever the topology sets (a sink that commits on
    #: time): its own ``topology.tick.tuple.freq.secs`` unless its config names one (Storm's per-component
    #: tick frequency)
    tick_secs: Optional[float] = None
    #: ``combine(a, b)``, a ``@staticmethod``: two tuples (values lists) of one key of a fields-grouped input
    #: made one, with the same key values (Hadoop's combiner, Flink's local aggregation). Associative, and
    #: free of side effects: the tasks that feed this bolt fold each batch's tuples of a key into one before
    #: the exchange, in every reliability mode (docs/runtime.md, "Map-side combining").
    combine: Optional[Callable[[Sequence[object], Sequence[object]], Sequence[object]]] = None

    def process(self, tup: Tuple) -> None:
        """Handle one tuple."""

    def process_tick(self, tup: Tuple) -> None:
        """Handle a tick tuple (``topology.tick.tuple.freq.secs``)."""

    def process_batch(self, batch: TupleBatch) -> None:
        """Handle several tuples at once (optional). A bolt that overrides it gets, instead of a
        ``process`` call a tuple, one call with the tuples of each run it receives (at least once,
        of each span: tuples in the same trees) and of each ``emit_many`` handed to it in a chain.
        The default calls ``process`` for each tuple."""
        for tup in batch:
            self.process(tup)

    def emit(
        self,
        values: Sequence[object],
        stream: str = DEFAULT_STREAM,
        anchors: Optional[Iterable[Tuple]] = None,
        direct_task: Optional[int] = None,
    ) -> tuple:
        """Emit a tuple, anchored to ``anchors`` for at-least-once. Returns the target task ids, as a tuple."""
        return self._collector.emit(values, stream, None, anchors, direct_task)

    def emit_many(self, values_list: Sequence[Sequence[object]], stream: str = DEFAULT_STREAM,
                  anchors: Optional[Iterable[Tuple]] = None) -> None:
        """Emit each of ``values_list`` in order, as ``emit`` would: one call for all (in a chain,
        handed to the next task as one batch, to its ``process_batch``)."""
        for values in values_list:
            self.emit(values, stream, anchors)

    def emit_columns(self, columns: Sequence[Sequence[object]], stream: str = DEFAULT_STREAM,
                     anchors: Optional[Iterable[Tuple]] = None) -> None:
        """Emit the tuples whose field ``i`` is ``columns[i]`` (one list a declared field, equal
        lengths), in order, as ``emit_many`` would; across processes they travel as columns, not as
        a list a tuple, to a ``process_batch`` that reads ``batch.columns``."""
        column_count(columns, stream, self.field_count(stream))
        self.emit_many(rows_of(columns), stream, anchors)

    def ack(self, tup: Tuple) -> None:
        self._collector.ack(tup)

    def fail(self, tup: Tuple) -> None:
        self._collector.fail(tup)

    @classmethod
    def spec(
        cls,
        name: Optional[str] = None,
        par: int = 1,
        inputs: object = None,
        config: Optional[Mapping] = None,
    ) -> ComponentSpec:
        """A component spec for the class DSL."""
        return ComponentSpec(name, "BOLT", cls, par, inputs, config)


class ReliableSpout(Spout):
    """A spout that replays failed tuples: each id is emitted again when its tree fails or times
    out, at most ``max_retries`` times; then ``on_give_up(tup_id, values)`` is called.

    Emit with an id as usual (``self.emit(values, tup_id=...)``); override
    ``on_ack(tup_id)`` to learn of completed ids (e.g. to commit an offset) and
    ``on_give_up`` for ids that keep failing. Ids must be unique among those in
    flight. A subclass that overrides ``ack`` or ``fail`` must call these.
    """

    max_retries = 3

    def _replay_state(self) -> tuple:
        try:
            return self.__inflight, self.__retries
        except AttributeError:
            self.__inflight: dict = {}  # tup_id -> (values, stream, direct_task)
            self.__retries: dict = {}  # tup_id -> replays so far
            return self.__inflight, self.__retries

    def emit(self, values: Sequence[object], tup_id: object = None, stream: str = DEFAULT_STREAM,
             direct_task: Optional[int] = None) -> tuple:
        if tup_id is not None:
            self._replay_state()[0][tup_id] = (values, stream, direct_task)
        return super().emit(values, tup_id, stream, direct_task)

    def ack(self, tup_id: object) -> None:
        inflight, retries = self._replay_state()
        inflight.pop(tup_id, None)
        retries.pop(tup_id, None)
        self.on_ack(tup_id)

    def fail(self, tup_id: object) -> None:
        inflight, retries = self._replay_state()
        entry = inflight.get(tup_id)
        if entry is None:
            return
        tries = retries.get(tup_id, 0)
        if tries >= self.max_retries:
            del inflight[tup_id]
            retries.pop(tup_id, None)
            self.on_give_up(tup_id, entry[0])
            return
        retries[tup_id] = tries + 1
        values, stream, direct_task = entry
        super().emit(values, tup_id, stream, direct_task)

    def on_ack(self, tup_id: object) -> None:
        """The tree of ``tup_id`` completed."""

    def on_give_up(self, tup_id: object, values: Sequence[object]) -> None:
        """``tup_id`` failed ``max_retries`` + 1 times: it is not emitted again."""
