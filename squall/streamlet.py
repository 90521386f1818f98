"""The Streamlet API (heronpy's shape): functional operators compiled into an ordinary topology.

::

    builder = Builder("word_count")
    counts = (builder.source(lines).flat_map(str.split)
              .key_by(lambda word: word, lambda word: 1).reduce_by_key(operator.add))

``build()`` makes a ``Topology`` of one spout or bolt per operator
(``squall/streamlet_ops.py``), with the same packing, runtime, metrics and
CLI as any other; a topology file may expose the builder itself. Each
operator's class is made here and reached by other processes through the
builder (``<module>:<builder variable>.compiled.<component>``), so the
builder must be a module-level variable of its topology file, and its user
functions may be lambdas.

Elements travel as msgpack: give operators JSON-like values (a tuple may
arrive as a list). A keyed streamlet (``key_by``) carries ``(key, value)``
pairs; ``reduce_by_key``, the windowed operators and ``join`` take one, or
elements that are ``(key, value)`` pairs (heronpy's way: keyed for them). The
windowed operators emit ``{"key", "window": [start, end], "value"}``.
"""
from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any, Callable, Optional

from squall import streamlet_ops as ops
from squall.component import Bolt, Spout
from squall.errors import TopologyError
from squall.stream import Grouping
from squall.topology import Topology, TopologyBuilder
from squall.window import Window

VALUE = ["value"]
KEYED = ["key", "value"]


class Builder:
    """Where streamlets start (``source``); ``build()`` compiles them into a Topology."""

    def __init__(self, name: Optional[str] = None) -> None:
        self.name = name
        self._module = sys._getframe(1).f_globals.get("__name__", "")  # where the builder variable lives
        self._streamlets: list = []
        self._config: dict = {}
        self._compiled: Optional[SimpleNamespace] = None

    def source(self, items: object, config: Optional[dict] = None) -> "Streamlet":
        """Elements from ``items``: an iterable, a function returning one (called in each task), or a
        ``Spout`` subclass (its default stream's values; one field is the element, several their list),
        such as a connector's (``source(KafkaSpout, config={"kafka.topics": ...})``); ``config`` is the
        component's config."""
        if isinstance(items, type) and issubclass(items, Spout):
            fields = [s for s in items.declared_streams() if s.name == "default"]
            return self._add("source", [], fields[0].fields if fields else (), spout=items, config=config)
        if isinstance(items, type) or not (callable(items) or hasattr(items, "__iter__")):
            raise TypeError(f"Builder.source: expected an iterable, a function returning one or a Spout subclass, "
                            f"got {items!r}")
        return self._add("source", [], VALUE, fn=items, config=config)

    def set_config(self, config: dict) -> None:
        """Topology-wide configuration, as ``TopologyBuilder.set_config``."""
        self._config.update(config)

    def build(self, name: Optional[str] = None) -> Topology:
        """The topology: ``name``, else the builder's, else its module's."""
        name = name or self.name or self._module.rsplit(".", 1)[-1]
        compiled = self.compiled
        tb = TopologyBuilder(name)
        for s in self._streamlets:
            cls = getattr(compiled, s.name)
            config = s.details.get("config")
            if not s.parents:
                tb.add_spout(s.name, cls, s.par, config=config)
                continue
            inputs = {p.name: Grouping.fields("key") if s.by_key else Grouping.SHUFFLE for p in s.parents}
            tb.add_bolt(s.name, cls, s.par, inputs=inputs, config=config)
        tb.set_config(self._config)
        return tb.build()

    @property
    def compiled(self) -> SimpleNamespace:
        """Component name -> its class, made once every streamlet is declared (processes import them from here)."""
        if self._compiled is None:
            where = f"{self._module}:{self._variable()}.compiled"
            names = [s.name for s in self._streamlets]
            for s in self._streamlets:
                if names.count(s.name) > 1:
                    raise TopologyError(f"streamlets: two are named {s.name!r}; give one another name with .named()")
            self._compiled = SimpleNamespace(**{s.name: s.component_class(where) for s in self._streamlets})
        return self._compiled

    def _variable(self) -> str:
        module = sys.modules.get(self._module)
        found = [attr for attr, value in vars(module).items() if value is self] if module is not None else []
        if found:
            return found[0]
        raise TopologyError(f"streamlet builder {self.name or ''!r} is not a module-level variable of {self._module}: "
                            "define it at the top level of the topology file, so that every Squall process finds "
                            "its functions")

    def _add(self, op: str, parents: list, fields: Any, **details: Any) -> "Streamlet":
        for p in parents:
            if p.builder is not self:
                raise ValueError(f"{op}: streamlet {p.name!r} belongs to another Builder")
        streamlet = Streamlet(self, op, f"{op}{len(self._streamlets)}", parents, list(fields), details)
        self._streamlets.append(streamlet)
        self._compiled = None
        return streamlet


class Streamlet:
    """A stream of elements and the operator that makes it; each method adds an operator after it."""

    def __init__(self, builder: Builder, op: str, name: str, parents: list, fields: list, details: dict) -> None:
        self.builder = builder
        self.op = op
        self.name = name
        self.parents = parents
        self.fields = fields  # of its output stream (none: a sink)
        self.details = details
        self.par = 1
        self.by_key = op in ("reduce_by_key", "reduce_by_key_and_window", "join")

    @property
    def keyed(self) -> bool:
        return self.fields == KEYED

    def named(self, name: str) -> "Streamlet":
        """Its component's name (letters, digits, '_', '-'; default ``<operator><n>``)."""
        if not isinstance(name, str) or "." in name or not name:
            raise ValueError(f"named({name!r}): a streamlet's name is a component name without '.'")
        self.name = name
        self.builder._compiled = None
        return self

    def parallelism(self, n: int) -> "Streamlet":
        """Its component's task count."""
        self.par = n
        return self

    # operators ------------------------------------------------------------------------------------
    def map(self, fn: Callable[[Any], Any]) -> "Streamlet":
        return self._then("map", VALUE, fn=fn)

    def flat_map(self, fn: Callable[[Any], Any]) -> "Streamlet":
        """Each element of ``fn(element)`` (an iterable)."""
        return self._then("flat_map", VALUE, fn=fn)

    def filter(self, fn: Callable[[Any], bool]) -> "Streamlet":
        return self._then("filter", self.fields, fn=fn)

    def key_by(self, fn: Callable[[Any], Any], value: Optional[Callable[[Any], Any]] = None) -> "Streamlet":
        """Keyed: each element becomes ``(fn(element), element)``, or ``(fn(element), value(element))``."""
        return self._then("key_by", KEYED, fn=fn, value=value)

    def reduce_by_key(self, fn: Callable[[Any, Any], Any], combine: bool = False) -> "Streamlet":
        """Keyed: for each element, ``(key, fn(acc, value))``, the running reduction of its key's values.

        ``combine`` (``fn`` associative): the upstream tasks reduce each batch's values of a key before the
        exchange (Spark's map-side combine), so there is one update per key per batch, not per element;
        each key's last value is the same (docs/windows.md)."""
        return self._keyed()._then("reduce_by_key", KEYED, fn=fn, combine=combine)

    def reduce_by_key_and_window(self, window: Window, fn: Callable[[Any, Any], Any],
                                 timestamp: Optional[Callable[[Any], float]] = None, lag: float = 0.0) -> "Streamlet":
        """Each key's values in each window reduced with ``fn`` (associative), emitted when the window closes
        as ``{"key", "window": [start, end], "value"}``. Processing time, unless ``timestamp(value)`` gives
        event time (with ``lag``: see ``WindowedBolt``). In processing time over a duration window the
        upstream tasks reduce each batch's values of a key before the exchange (docs/windows.md)."""
        return self._keyed()._then("reduce_by_key_and_window", VALUE, fn=fn, **_windowing(window, timestamp, lag))

    def join(self, other: "Streamlet", window: Window, fn: Callable[[Any, Any], Any],
             timestamp: Optional[Callable[[Any], float]] = None, lag: float = 0.0) -> "Streamlet":
        """Inner join of two keyed streamlets: in each window, ``{"key", "window", "value": fn(a, b)}`` for each
        pair of values with the same key, ``a`` from this one and ``b`` from ``other``."""
        if other is self:
            raise ValueError("join: a streamlet cannot be joined with itself; clone() it first")
        return self._keyed()._then("join", VALUE, others=[other._keyed()], fn=fn,
                                   **_windowing(window, timestamp, lag))

    def union(self, other: "Streamlet") -> "Streamlet":
        """The elements of both (both keyed, or neither)."""
        if other.fields != self.fields:
            raise ValueError(f"union: {self.name!r} carries {self.fields} and {other.name!r} {other.fields}")
        if other is self:
            raise ValueError("union: a streamlet cannot be united with itself")
        return self._then("union", self.fields, others=[other])

    def clone(self, n: int) -> list:
        """``n`` streamlets, each with every element."""
        return [self._then("clone", self.fields) for _ in range(n)]

    def repartition(self, n: int) -> "Streamlet":
        """The same elements over ``n`` tasks (shuffled)."""
        return self._then("repartition", self.fields).parallelism(n)

    def log(self) -> "Streamlet":
        """Logs each element (INFO, in the task's log)."""
        return self._then("log", ())

    def sink(self, fn: object, config: Optional[dict] = None) -> "Streamlet":
        """``fn(element)`` for each element (``fn.setup(config, context)`` first in each task, if it has one),
        or a ``Bolt`` subclass that takes this streamlet's tuples, such as a connector's
        (``sink(FileSink, config={"files.path": ...})``); ``config`` is the component's config."""
        if isinstance(fn, type) and issubclass(fn, Bolt):
            return self._then("sink", (), bolt=fn, config=config)
        if isinstance(fn, type) or not callable(fn):
            raise TypeError(f"Streamlet.sink: expected a function or a Bolt subclass, got {fn!r}")
        return self._then("sink", (), fn=fn, config=config)

    # compiling ----------------------------------------------------------------------------------
    def _then(self, op: str, fields: Any, others: Any = (), **details: Any) -> "Streamlet":
        if not self.fields:
            raise ValueError(f"{op}: {self.name!r} is a {self.op}, which emits nothing")
        return self.builder._add(op, [self, *others], fields, **details)

    def _keyed(self) -> "Streamlet":
        """This streamlet if keyed, else its elements taken as ``(key, value)`` pairs (heronpy's way)."""
        return self if self.keyed else self.key_by(pair_key, pair_value)

    def component_class(self, where: str) -> type:
        """The spout or bolt class of this operator, named ``where.<name>`` for other processes to import."""
        d = self.details
        attrs: dict = {"__module__": where.partition(":")[0], "__qualname__": f"{where.partition(':')[2]}.{self.name}"}
        if d.get("spout") is not None:
            return d["spout"]
        if d.get("bolt") is not None:
            return d["bolt"]
        if not self.parents:
            base: type = ops.StreamletSpout
            attrs["items"] = staticmethod(d["fn"]) if callable(d["fn"]) else d["fn"]
            return type(self.name, (base,), attrs)
        base = _BASES[self.op]
        upstream = self.parents[0]
        attrs["keyed_in"] = upstream.keyed
        attrs["whole"] = not upstream.keyed and len(upstream.fields) > 1
        if "fn" in d:
            attrs["fn"] = staticmethod(d["fn"])
        if d.get("combine") or (self.op == "reduce_by_key_and_window" and d["timestamp"] is None
                                and not d["window"].by_count):
            attrs["combine"] = ops.keyed_combine(d["fn"])
        if self.op in ("filter", "union", "clone", "repartition"):
            attrs["outputs"] = list(upstream.fields)
        if "window" in d:
            attrs["window"] = d["window"]
            attrs["lag"] = d["lag"]
            if d["timestamp"] is not None:
                extract = d["timestamp"]
                attrs["timestamp"] = lambda bolt, tup: extract(tup[1])
        if self.op == "join":
            attrs["left"] = upstream.name
        if self.op == "key_by" and d["value"] is not None:
            attrs["value_fn"] = staticmethod(d["value"])
        return type(self.name, (base,), attrs)


_BASES = {"map": ops.MapBolt, "flat_map": ops.FlatMapBolt, "filter": ops.FilterBolt, "key_by": ops.KeyByBolt,
          "reduce_by_key": ops.ReduceByKeyBolt, "reduce_by_key_and_window": ops.WindowReduceBolt,
          "join": ops.JoinBolt, "union": ops.PassBolt, "clone": ops.PassBolt, "repartition": ops.PassBolt,
          "log": ops.LogBolt, "sink": ops.SinkBolt}


def pair_key(element: object) -> Any:
    """The key of an element that is a ``(key, value)`` pair."""
    return _pair(element)[0]


def pair_value(element: object) -> Any:
    return _pair(element)[1]


def _pair(element: object) -> Any:
    if not isinstance(element, (tuple, list)) or len(element) != 2:
        raise TypeError(f"a by-key operator got {element!r}: it needs (key, value) pairs, or a keyed streamlet "
                        "(key_by)")
    return element


def _windowing(window: Any, timestamp: Any, lag: Any) -> dict:
    if not isinstance(window, Window):
        raise TypeError(f"expected a squall.Window (Window.tumbling(...) or Window.sliding(...)), got {window!r}")
    if timestamp is None and lag:
        raise ValueError("lag without timestamp: only event time has late elements")
    return {"window": window, "timestamp": timestamp, "lag": lag}
