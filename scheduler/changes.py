"""What ``squall update`` changes in a running topology, and the plan that follows.

A ``TopologyUpdate`` is new parallelism and new component resources (the
``squall.component.cpu|ram.mb|disk.mb`` keys, per component or for every
component). ``apply`` gives the new logical plan; ``plan_update`` repacks the
running packing plan for it (moving as little as possible, opening and
closing containers as the caps require) and ``describe`` shows the result and
its difference: what a dry run prints, and what an update prints before it
applies anything.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from squall.chaining import CHAINING_KEY, chains
from squall.commandline import format_table
from squall.conf import Config
from squall.conf.registry import ConfigError, registry
from squall.conf.resolve import parse_property
from squall.errors import SquallError, TopologyError
from squall.idl import replace, schema
from squall.logical import decode_config, encode_config
from squall.packing import PackingError, PlanDiff, repack, with_component_config, with_parallelism
from squall.stateful import check_stateful_update

# What an update may change: a key that only sizes instances, so it takes effect by repacking.
RESOURCE_KEYS = ("squall.component.cpu", "squall.component.ram.mb", "squall.component.disk.mb")
# squall.chaining: head or off splits a chain (the health manager's split_chain); an update never fuses (apply)
UPDATABLE_KEYS = RESOURCE_KEYS + (CHAINING_KEY,)


@dataclass(frozen=True)
class TopologyUpdate:
    """New parallelism (component -> n) and resources: ``component_config`` (component -> key -> value)
    and ``config`` (key -> value, every component: the command-line layer)."""

    parallelism: Mapping[str, int] = field(default_factory=dict)
    component_config: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    config: Mapping[str, object] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.parallelism or self.component_config or self.config)

    def check(self, topology: schema.Topology) -> None:
        """Refuse, naming it, a component the topology lacks, a parallelism that is not a positive
        integer, a key an update cannot change, or a value the key does not take."""
        names = [c.name for c in topology.components]
        for component in list(self.parallelism) + list(self.component_config):
            if component not in names:
                raise SquallError(f"topology {topology.name!r} has no component {component!r} "
                                  f"(components: {', '.join(names)})")
        for component, par in self.parallelism.items():
            if isinstance(par, bool) or not isinstance(par, int) or par < 1:
                raise SquallError(f"--component-parallelism {component}={par!r}: must be a positive integer")
        overridden = decode_config(topology.overrides)
        for component, keys in self.component_config.items():
            for key, value in keys.items():
                _check_key(key, value, f"{component}:{key}")
                if key in overridden:
                    raise SquallError(
                        f"{component}:{key}: the topology was submitted with --config-property {key}, which is "
                        f"above every component's config; update it for every component with "
                        f"--config-property {key}=VALUE")
        for key, value in self.config.items():
            _check_key(key, value, key)

    def apply(self, topology: schema.Topology) -> schema.Topology:
        """The topology with this update: parallelism, component configs and overrides replaced.

        An update never fuses tasks that run in processes of their own (that would restart them, and
        a spout would start again): a component the new parallelism would chain to its upstream, and
        was not, gets ``squall.chaining: head``. A chain whose edge no longer allows it is split (its
        process restarts as processes of their own)."""
        self.check(topology)
        changed = with_parallelism(with_component_config(topology, self.component_config), self.parallelism)
        changed = replace(changed, overrides={**topology.overrides, **encode_config(self.config, "--config-property")})
        before = {(a, b) for chain in chains(topology) for a, b in zip(chain, chain[1:])}
        joined = {b for chain in chains(changed) for a, b in zip(chain, chain[1:]) if (a, b) not in before}
        if joined:
            changed = with_component_config(changed, {name: {CHAINING_KEY: "head"} for name in joined})
        try:
            check_stateful_update(topology, changed)
        except TopologyError as e:
            raise SquallError(f"--component-parallelism: {e}") from None
        return changed


def _check_key(key: str, value: object, where: str) -> None:
    if key not in UPDATABLE_KEYS:
        raise SquallError(f"--config-property {where}: update changes parallelism, the resources of "
                          f"instances ({', '.join(RESOURCE_KEYS)}) and {CHAINING_KEY}; other keys take a resubmit")
    try:
        registry()[key].check(value, f"--config-property {where}")
    except ConfigError as e:
        raise SquallError(str(e)) from None


def parse_assignments(texts: list, option: str, kind: type) -> dict:
    """``["count=4", ...]`` (``--component-parallelism``, ``--component-cpu``, ``--component-ram``) ->
    component -> value of ``kind``; one clear error naming the option and the text otherwise."""
    out: dict = {}
    for text in texts or []:
        component, sep, raw = text.partition("=")
        component, raw = component.strip(), raw.strip()
        try:
            value = kind(raw)
        except ValueError:
            value = None
        if not sep or not component or value is None:
            unit = "an integer" if kind is int else "a number"
            raise SquallError(f"{option} {text!r}: expected COMPONENT=N with N {unit}")
        out[component] = value
    return out


def parse_config_properties(texts: list) -> tuple:
    """``--config-property [COMPONENT:]KEY=VALUE`` -> (component -> key -> value, key -> value)."""
    per_component: dict = {}
    every: dict = {}
    for text in texts or []:
        try:
            key, value = parse_property(text)
        except ConfigError as e:
            raise SquallError(str(e)) from None
        component, sep, name = key.rpartition(":")
        if sep:
            per_component.setdefault(component, {})[name] = value
        else:
            every[key] = value
    return per_component, every


@dataclass(frozen=True)
class PlannedUpdate:
    """An update worked out against the running topology: nothing written yet."""

    name: str
    topology: schema.Topology  # the new logical plan
    current: schema.PackingPlan  # the running packing plan
    proposed: schema.PackingPlan  # the new packing plan
    diff: PlanDiff
    changes: list  # [(component, what, before, after)]

    @property
    def changed(self) -> bool:
        return self.proposed.id != self.current.id or bool(self.changes)


def plan_update(name: str, topology: schema.Topology, current: schema.PackingPlan, update: TopologyUpdate, base: Config) -> PlannedUpdate:
    """Repack ``current`` for ``update``; a PackingError (an instance too big for any container) is
    a SquallError naming it."""
    new_topology = update.apply(topology)
    try:
        proposed, diff = repack(new_topology, current, dict(update.parallelism), base)
    except PackingError as e:
        raise SquallError(f"cannot update topology {name!r}: {e}") from None
    return PlannedUpdate(name, new_topology, current, proposed, diff, _changes(topology, new_topology, current,
                                                                                proposed))


def _changes(old: schema.Topology, new: schema.Topology, old_plan: schema.PackingPlan, new_plan: schema.PackingPlan) -> list:
    """(component, what, before, after) for every component whose parallelism or instance size changed."""
    def sizes(plan: schema.PackingPlan) -> dict:
        return {i.id.component: i.resources for c in plan.containers for i in c.instances}

    before, after = sizes(old_plan), sizes(new_plan)
    out = []
    for o, n in zip(old.components, new.components):
        if o.parallelism != n.parallelism:
            out.append((n.name, "parallelism", o.parallelism, n.parallelism))
        b, a = before.get(n.name), after.get(n.name)
        if b is not None and a is not None:
            for what, x, y in (("cpu", b.cpu, a.cpu), ("ram_mb", b.ram_mb, a.ram_mb), ("disk_mb", b.disk_mb, a.disk_mb)):
                if x != y:
                    out.append((n.name, what, x, y))
    return out


def describe(planned: PlannedUpdate) -> list:
    """Lines: what changes, then the new plan's containers with what each gains and loses."""
    lines = [f"update of topology {planned.name!r}:"]
    units = {"parallelism": "", "cpu": " cores", "ram_mb": " MiB", "disk_mb": " MiB"}
    for component, what, before, after in planned.changes:
        lines.append(f"  {component:<16} {what:<12} {before:g} -> {after:g}{units[what]}")
    if not planned.changes:
        lines.append("  nothing changes")
    diff = planned.diff
    old_ids = {c.id for c in planned.current.containers}
    new_ids = {c.id for c in planned.proposed.containers}
    lines.append(f"packing plan {planned.current.id} -> {planned.proposed.id}: {len(old_ids)} -> {len(new_ids)} "
                 f"containers ({len(new_ids - old_ids)} new, {len(old_ids - new_ids)} removed); instances "
                 f"{len(diff.added)} added, {len(diff.removed)} removed, {len(diff.moved)} moved, "
                 f"{len(diff.resized)} resized in place, the rest untouched")
    gained = _by_container(planned.proposed, diff.added + diff.moved)
    lost = _by_container(planned.current, diff.removed)
    moved_out = _by_container(planned.current, diff.moved)
    rows = []
    for c in sorted(planned.proposed.containers, key=lambda c: c.id):
        state = "new" if c.id not in old_ids else ""
        rows.append([c.id, state, len(c.instances), f"{c.resources.cpu:g}", c.resources.ram_mb,
                     _names(gained.get(c.id)), _names(lost.get(c.id, []) + moved_out.get(c.id, []))])
    for c in sorted(planned.current.containers, key=lambda c: c.id):
        if c.id not in new_ids:
            rows.append([c.id, "removed", 0, "-", "-", "", _names(lost.get(c.id, []) + moved_out.get(c.id, []))])
    lines.append(format_table(["container", "state", "instances", "cpu", "ram_mb", "gains", "loses"], rows,
                              right={"instances", "cpu", "ram_mb"}))
    return lines


def _by_container(plan: schema.PackingPlan, ids: list) -> dict:
    where = {i.id.task_id: c.id for c in plan.containers for i in c.instances}
    out: dict = {}
    for i in ids:
        if i.task_id in where:
            out.setdefault(where[i.task_id], []).append(i)
    return out


def _names(ids: Optional[list]) -> str:
    return " ".join(f"{i.component}:{i.task_id}" for i in sorted(ids or [], key=lambda i: i.task_id))


def diff_json(planned: PlannedUpdate) -> dict:
    """The update as data (``--json``)."""
    def ids(xs: list) -> list:
        return [f"{i.component}:{i.task_id}" for i in xs]

    return {
        "topology": planned.name,
        "changes": [{"component": c, "what": w, "before": b, "after": a} for c, w, b, a in planned.changes],
        "packing_plan": {"before": planned.current.id, "after": planned.proposed.id},
        "containers": {"before": sorted(c.id for c in planned.current.containers),
                       "after": sorted(c.id for c in planned.proposed.containers)},
        "added": ids(planned.diff.added), "removed": ids(planned.diff.removed), "moved": ids(planned.diff.moved),
        "resized": ids(planned.diff.resized),
    }
