"""Building topologies: TopologyBuilder, the class DSL, and validation.

``build()`` checks everything a topology can get wrong before anything runs
and produces the logical plan, a Thrift ``Topology`` struct. Every error names
the path at fault (``components.split.inputs[0].grouping``).
"""
from __future__ import annotations

import inspect
import re
from typing import Any, Mapping, Optional, Sequence

from squall.component import TICK_FREQ_KEY, Bolt, Spout
from squall.conf import Config, ConfigError, base_config, unknown_key_warning
from squall.errors import TopologyError
from squall.idl import schema
from squall.importing import qualified_name
from squall.logical import encode_config
from squall.spec import ComponentSpec, StreamRef, _PendingRef
from squall.stream import DEFAULT_STREAM, Grouping, GroupingSpec, Stream, encode_custom
from squall.stateful import check_stateful, is_stateful
from squall.windowed_bolt import WindowedBolt, check_windowed

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def valid_name(name: object) -> bool:
    """Topology and component names: letters, digits, '_', '.', '-', not starting with a symbol."""
    return isinstance(name, str) and bool(_NAME.match(name))


class TopologyBuilder:
    """Declare spouts and bolts, then ``build()`` a validated Topology."""

    def __init__(self, name: str):
        self.name = name
        self._specs: list = []
        self._config: dict = {}

    def add_spout(
        self, name: str, cls: type, par: int = 1, config: Optional[Mapping[str, object]] = None
    ) -> ComponentSpec:
        spec = ComponentSpec(name, "SPOUT", cls, par, None, config)
        self._specs.append(spec)
        return spec

    def add_bolt(
        self,
        name: str,
        cls: type,
        par: int = 1,
        inputs: object = None,
        config: Optional[Mapping[str, object]] = None,
    ) -> ComponentSpec:
        """``inputs`` maps a spec, a name, ``spec["stream"]`` or ``(spec, stream)`` to a
        grouping; a list of those means shuffle grouping from each."""
        spec = ComponentSpec(name, "BOLT", cls, par, inputs, config)
        self._specs.append(spec)
        return spec

    def add_spec(self, *specs: ComponentSpec) -> None:
        self._specs.extend(specs)

    def set_config(self, config: Mapping[str, object]) -> None:
        """Topology-wide configuration (above files, below component config)."""
        self._config.update(config)

    def build(self) -> "Topology":
        return Topology._from_parts(self.name, self._specs, self._config)


class Topology:
    """A validated topology: its logical plan plus warnings found while building.

    Also the base of the class DSL::

        class WordCount(Topology):
            config = {"topology.workers": 2}
            sentences = SentenceSpout.spec(par=2)
            count = CountBolt.spec(par=3, inputs={sentences: Grouping.fields("word")})

    ``WordCount()`` builds it; the topology's name is the class name unless a
    ``name`` class attribute says otherwise.
    """

    name: str
    config: Mapping[str, object] = {}

    def __init__(self) -> None:
        cls = type(self)
        if cls is Topology:
            raise TypeError("use TopologyBuilder(name).build() or subclass Topology")
        specs = []
        for attr, value in vars(cls).items():
            if isinstance(value, ComponentSpec):
                if value.name is None:
                    value.name = attr
                specs.append(value)
        name = cls.__dict__.get("name", cls.__name__)
        built = Topology._from_parts(name, specs, dict(cls.config))
        self.__dict__.update(built.__dict__)

    @classmethod
    def _from_parts(cls, name: str, specs: Sequence[ComponentSpec], config: Mapping) -> "Topology":
        topology = object.__new__(Topology)
        topology.name = name
        topology.warnings = []
        topology.plan = _Validator(name, specs, config, topology.warnings).build()
        return topology

    # Convenience views of the plan -------------------------------------------------

    @property
    def components(self) -> list:
        return list(self.plan.components)

    def component(self, name: str) -> Any:
        for c in self.plan.components:
            if c.name == name:
                return c
        raise KeyError(f"topology {self.name!r} has no component {name!r}")

    def total_tasks(self) -> int:
        return sum(c.parallelism for c in self.plan.components)

    def __repr__(self) -> str:
        return f"<Topology {self.name!r}: {len(self.plan.components)} components, {self.total_tasks()} tasks>"


class _Validator:
    """Turns specs into the logical plan, refusing the first thing wrong."""

    def __init__(self, name: object, specs: Sequence[ComponentSpec], config: Mapping, warnings: list):
        self.name = name
        self.specs = list(specs)
        self.config = config
        self.warnings = warnings
        self.streams: dict = {}  # component -> {stream name: Stream}

    def build(self) -> Any:
        if not valid_name(self.name):
            raise TopologyError(
                f"topology name {self.name!r}: use letters, digits, '_', '.' and '-', starting with a letter or digit"
            )
        base = base_config()
        self._check_config(base, self.config, "config")
        self._check_components()
        if not any(s.kind == "SPOUT" for s in self.specs):
            raise TopologyError(f"topology {self.name!r} has no spout: add one with add_spout()")
        components = [self._component(spec, base) for spec in self.specs]
        plan = schema.Topology(
            name=self.name,
            components=components,
            config=encode_config(self.config, "config"),
            overrides={},
        )
        check_stateful(plan, base)
        return plan

    def _check_config(self, base: Config, layer: object, where: str) -> None:
        if layer is None:
            return
        if not isinstance(layer, Mapping):
            raise TopologyError(f"{where}: expected a dict of config keys, got {layer!r}")
        try:
            base.with_layer(layer, where)
        except ConfigError as e:
            raise TopologyError(str(e)) from e
        for key in layer:
            warning = unknown_key_warning(key)
            if warning:
                self.warnings.append(f"{where}: {warning}")

    def _check_components(self) -> None:
        seen = set()
        for i, spec in enumerate(self.specs):
            name = spec.name
            if not valid_name(name) or name.startswith("__"):
                raise TopologyError(
                    f"components[{i}]: name {name!r} must be letters, digits, '_', '.' or '-' "
                    "(and not start with '__')"
                )
            if name in seen:
                raise TopologyError(f"components.{name}: duplicate component name {name!r}")
            seen.add(name)
            where = f"components.{name}"
            base_cls = Spout if spec.kind == "SPOUT" else Bolt
            if not (isinstance(spec.cls, type) and issubclass(spec.cls, base_cls)):
                raise TopologyError(
                    f"{where}.class: expected a subclass of squall.{base_cls.__name__}, got {spec.cls!r}"
                )
            if (spec.kind == "BOLT" and spec.cls.process_batch is not Bolt.process_batch
                    and not getattr(spec.cls, "auto_ack", True)):
                raise TopologyError(f"{where}.class: {spec.cls.__name__} has process_batch and auto_ack = False; a "
                                    "batch is acked when process_batch returns: keep auto_ack on")
            if spec.kind == "BOLT" and not isinstance(inspect.getattr_static(spec.cls, "combine", None),
                                                      (type(None), staticmethod)):
                raise TopologyError(f"{where}.class: {spec.cls.__name__}.combine must be a @staticmethod: it runs in "
                                    f"the tasks that feed {name!r}, which have no {spec.cls.__name__} object")
            par = spec.par
            if isinstance(par, bool) or not isinstance(par, int) or par < 1:
                raise TopologyError(f"{where}.par: parallelism must be a positive integer, got {par!r}")
            try:
                self.streams[name] = {s.name: s for s in spec.cls.declared_streams()}
            except ValueError as e:
                raise TopologyError(f"{where}.outputs: {e}") from e
            if len(self.streams[name]) != len(spec.cls.declared_streams()):
                raise TopologyError(f"{where}.outputs: a stream name is declared twice")

    def _component(self, spec: ComponentSpec, base: Config) -> Any:
        where = f"components.{spec.name}"
        try:
            class_name = qualified_name(spec.cls, f"{where}.class")
        except ValueError as e:
            raise TopologyError(str(e)) from e
        self._check_config(base, spec.config, f"{where}.config")
        inputs = self._inputs(spec, where) if spec.kind == "BOLT" else []
        config = dict(spec.config or {})
        if spec.kind == "BOLT" and spec.cls.tick_secs is not None:
            config.setdefault(TICK_FREQ_KEY, spec.cls.tick_secs)
        if spec.kind == "BOLT" and issubclass(spec.cls, WindowedBolt):
            resolved = base.with_layer(self.config, "config").with_layer(config, f"{where}.config")
            input_fields = [(f"{i.component}/{i.stream}", self.streams[i.component][i.stream].fields)
                            for i in inputs]
            tick = check_windowed(spec.cls, where, resolved, input_fields, self.streams[spec.name])
            if tick is not None:
                config.setdefault(TICK_FREQ_KEY, tick)  # the component's own tick frequency (Storm's)
        return schema.Component(
            name=spec.name,
            kind=getattr(schema.ComponentKind, spec.kind),
            class_name=class_name,
            parallelism=spec.par,
            outputs=[
                schema.StreamSchema(name=s.name, fields=list(s.fields), direct=s.direct)
                for s in self.streams[spec.name].values()
            ],
            inputs=inputs,
            config=encode_config(config, f"{where}.config"),
            auto_ack=bool(getattr(spec.cls, "auto_ack", True)) if spec.kind == "BOLT" else None,
            stateful=is_stateful(spec.cls) or None,
            rescalable=(spec.kind == "SPOUT" and is_stateful(spec.cls) and spec.cls.rescalable) or None,
        )

    def _inputs(self, spec: ComponentSpec, where: str) -> list:
        raw = spec.inputs
        if raw is None:
            return []
        if isinstance(raw, Mapping):
            pairs = list(raw.items())
        elif isinstance(raw, (list, tuple)) and not _is_ref_tuple(raw):
            pairs = [(ref, Grouping.SHUFFLE) for ref in raw]
        else:
            pairs = [(raw, Grouping.SHUFFLE)]
        result = []
        for i, (ref, grouping) in enumerate(pairs):
            at = f"{where}.inputs[{i}]"
            source, stream = self._resolve_ref(ref, at)
            result.append(self._input(source, stream, grouping, at))
        return result

    def _resolve_ref(self, ref: object, at: str) -> tuple:
        if isinstance(ref, ComponentSpec):
            source, stream = ref.name, DEFAULT_STREAM
        elif isinstance(ref, _PendingRef):
            source, stream = ref.spec.name, ref.stream
        elif isinstance(ref, StreamRef):
            source, stream = ref.component, ref.stream
        elif isinstance(ref, str):
            source, stream = ref, DEFAULT_STREAM
        elif _is_ref_tuple(ref):
            first = ref[0]
            source = first.name if isinstance(first, ComponentSpec) else first
            stream = ref[1]
        else:
            raise TopologyError(f"{at}: expected a component, (component, stream) or spec['stream'], got {ref!r}")
        if source not in self.streams:
            raise TopologyError(f"{at}: input from unknown component {source!r}")
        if stream not in self.streams[source]:
            declared = ", ".join(sorted(self.streams[source])) or "none"
            raise TopologyError(
                f"{at}: component {source!r} declares no stream {stream!r} (declared: {declared})"
            )
        return source, stream

    def _input(self, source: str, stream_name: str, grouping: object, at: str) -> Any:
        stream: Stream = self.streams[source][stream_name]
        if not isinstance(grouping, GroupingSpec):
            raise TopologyError(f"{at}.grouping: expected a Grouping, got {grouping!r}")
        kind = grouping.kind
        fields = list(grouping.fields)
        custom = None
        if kind in ("FIELDS", "PARTIAL_KEY"):
            for f in fields:
                if f not in stream.fields:
                    raise TopologyError(
                        f"{at}.grouping: {kind.lower()} grouping on field {f!r}, but stream "
                        f"{source}/{stream_name} declares {list(stream.fields)}"
                    )
        if kind == "DIRECT" and not stream.direct:
            raise TopologyError(
                f"{at}.grouping: direct grouping on stream {source}/{stream_name}, which is not "
                "declared direct (Stream(..., direct=True))"
            )
        if stream.direct and kind != "DIRECT":
            raise TopologyError(
                f"{at}.grouping: stream {source}/{stream_name} is direct; consume it with Grouping.DIRECT"
            )
        if kind == "CUSTOM":
            try:
                class_name, state = encode_custom(grouping.custom, f"{at}.grouping")
            except ValueError as e:
                raise TopologyError(str(e)) from e
            custom = schema.CustomGrouping(class_name=class_name, state_json=state)
        return schema.InputStream(
            component=source,
            stream=stream_name,
            grouping=getattr(schema.GroupingKind, kind),
            fields=fields,
            custom=custom,
        )


def _is_ref_tuple(value: object) -> bool:
    return (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], (str, ComponentSpec))
        and isinstance(value[1], str)
    )
