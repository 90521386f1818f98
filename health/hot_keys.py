"""The hot keys of a skewed component, from a sample of what its fields-grouped inputs carry.

Once ``skew`` is diagnosed and no fresh sample of the component's keys exists, the loop turns on tuple
sampling (docs/debugging.md, ``squall sample``) of the components that feed it by fields grouping, for
``squall.health.key.sample.secs``, at the percent that aims at ``SAMPLE_EVENTS`` sampled emits. When the time is over it
reads their events (as ``squall events`` does: from each container's debug server, on YARN too), counts
the key values on the streams into the component, and hands the ``KEPT`` most frequent to the
observations that follow, each with its share of the sample and the task fields grouping sends it to:
the route's own formula (CRC-32 of the key values' msgpack, ``squall/stateful.py``; into a stateful
component, the owner of the key's group). Sampling slows the sampled tasks while it lasts (0.8x of an
emit-only task at 1 %: bench/sampling.py), so a component's keys are sampled once and kept
``KEYS_FRESH_SECS``; a percent an operator set is left as it is and read the same way.

Pure: ``KeySampler`` keeps the schedule, ``hot_keys`` counts; ``health/manager.py`` does the I/O.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from squall.idl import schema
from squall.stateful import group_owner, stable_hash

SAMPLE_EVENTS = 2000  # sampled emits a sample aims at
MIN_PERCENT, MAX_PERCENT = 0.1, 10.0  # the sampling percent, whatever the rate
KEPT = 5  # hot keys reported
KEYS_FRESH_SECS = 600.0  # a sample of a component's keys is used this long, then taken again
LAG_SECS = 2.0  # a sample is read this long after its time is over: the tasks write their events at a flush


@dataclass(frozen=True)
class KeyedInput:
    """A fields-grouped input of a component: the emits of ``upstream`` on ``stream``, keyed by the values
    at ``key_index``."""

    upstream: str
    stream: str
    key_index: tuple


def keyed_inputs(topology: schema.Topology, component: str) -> list[KeyedInput]:
    """The fields-grouped inputs of ``component``."""
    by_name = {c.name: c for c in topology.components}
    out = []
    for inp in by_name[component].inputs:
        if inp.grouping != schema.GroupingKind.FIELDS or inp.component not in by_name:
            continue
        fields = next((list(s.fields) for s in by_name[inp.component].outputs if s.name == inp.stream), [])
        if all(f in fields for f in inp.fields or ()):
            out.append(KeyedInput(inp.component, inp.stream, tuple(fields.index(f) for f in inp.fields)))
    return out


def sample_percent(emits_per_sec: float, secs: float) -> float:
    """The percent of emits that gives about ``SAMPLE_EVENTS`` in ``secs``."""
    wanted = 100.0 * SAMPLE_EVENTS / max(emits_per_sec * secs, 1.0)
    return round(min(MAX_PERCENT, max(MIN_PERCENT, wanted)), 3)


def destination(key: Sequence[object], tasks: Sequence[int], key_groups: Optional[int]) -> int:
    """The task fields grouping sends ``key`` (the key values) to, of ``tasks`` (the component's, sorted)."""
    h = stable_hash(list(key))
    if key_groups:
        return tasks[group_owner(h % key_groups, len(tasks), key_groups)]
    return tasks[h % len(tasks)]


def hot_keys(events: Sequence[Mapping[str, object]], inputs: Sequence[KeyedInput], tasks: Sequence[int],
             key_groups: Optional[int]) -> list[dict]:
    """The ``KEPT`` most frequent keys of ``events`` (sampled emits) on ``inputs``, most frequent first:
    ``{"key", "share", "task"}`` (a key of one field is its value, of several the list of them)."""
    wanted = {(i.upstream, i.stream): i.key_index for i in inputs}
    counts: Counter = Counter()
    for e in events:
        index = wanted.get((e.get("component"), e.get("stream")))  # type: ignore[arg-type]
        values = e.get("values")
        if index is None or not isinstance(values, list) or any(k >= len(values) for k in index):
            continue
        counts[_hashable([values[k] for k in index])] += 1
    total = sum(counts.values())
    out = []
    for key, n in counts.most_common(KEPT):
        values = list(key)
        out.append({"key": values[0] if len(values) == 1 else values, "share": round(n / total, 3),
                    "task": destination(_plain(values), sorted(tasks), key_groups)})
    return out


def _hashable(values: list) -> tuple:
    return tuple(tuple(v) if isinstance(v, list) else v for v in values)


def _plain(values: list) -> list:
    return [list(v) if isinstance(v, tuple) else v for v in values]


@dataclass
class Sampling:
    """A sample being taken of ``component``'s keys: its inputs' emits since ``since`` until ``until``."""

    component: str
    inputs: tuple
    since: float
    until: float


class KeySampler:
    """Which component's keys to sample now, which samples are over, and the keys found."""

    def __init__(self) -> None:
        self.running: dict[str, Sampling] = {}
        self.found: dict[str, tuple[float, list]] = {}  # component -> (when, hot keys)

    def wanted(self, skewed: Sequence[str], now: float) -> list[str]:
        """Of ``skewed`` components, those with no fresh sample and none being taken."""
        return [c for c in skewed if c not in self.running
                and (c not in self.found or self.found[c][0] < now - KEYS_FRESH_SECS)]

    def start(self, component: str, inputs: Sequence[KeyedInput], now: float, secs: float) -> None:
        self.running[component] = Sampling(component, tuple(inputs), now, now + secs)

    def due(self, now: float) -> list[Sampling]:
        """The samples whose time is over (taken off the running ones)."""
        over = [s for s in self.running.values() if s.until + LAG_SECS <= now]
        for s in over:
            del self.running[s.component]
        return over

    def keep(self, component: str, keys: list, now: float) -> None:
        self.found[component] = (now, keys)

    def keys(self, now: float) -> dict[str, list]:
        """The fresh hot keys per component."""
        return {c: keys for c, (when, keys) in self.found.items() if when >= now - KEYS_FRESH_SECS}
