"""Stateful components: state saved at checkpoints, restored after a failure, re-sharded on rescale.

A ``StatefulBolt`` or ``StatefulSpout`` gets its state in ``init_state``: a
``KeyValueState``, empty at the first start and, after a failure or an
update, what the last complete checkpoint saved (docs/state.md). Keyed state
is stored by *key group*: a key's group is the stable hash fields grouping
uses, modulo ``squall.state.key.groups``. A bolt's task owns a contiguous
range of groups, and fields grouping into a stateful bolt routes a key to the
task that owns its group, so a parallelism change moves whole groups, with
their keys, to their new tasks. A spout's state is its task's own (its
position in its source): it is kept by task index.

Values and keys are stored with msgpack (numbers, strings, bytes, lists,
tuples as keys, dicts), the same encoding tuples travel in.
"""
from __future__ import annotations

import zlib
from typing import Any, Iterator, Mapping, Optional, Sequence

import msgpack

from squall.component import Bolt, Spout
from squall.conf import Config
from squall.errors import TopologyError
from squall.idl import schema
from squall.logical import component_config, topology_config

_packb = msgpack.Packer(use_bin_type=True).pack
SPOUT = schema.ComponentKind.SPOUT


def stable_hash(key_values: Sequence[object]) -> int:
    """A hash of key values that is the same in every process and run (CRC-32 of their msgpack)."""
    return zlib.crc32(_packb(list(key_values)))


def key_group(key: object, groups: int) -> int:
    """The key group of a state key: the group fields grouping routes its field values by (a tuple key
    stands for the values of a grouping on several fields)."""
    return stable_hash(list(key) if isinstance(key, tuple) else [key]) % groups


def group_owner(group: int, parallelism: int, groups: int) -> int:
    """The task index (of ``parallelism``) that owns ``group``: contiguous ranges, as Flink's."""
    return group * parallelism // groups


def owned_groups(index: int, parallelism: int, groups: int) -> range:
    """The key groups task ``index`` of ``parallelism`` owns."""
    return range(-(-index * groups // parallelism), -(-(index + 1) * groups // parallelism))


class KeyValueState:
    """A task's keyed state: ``get``, ``put``, ``delete``, ``items``, ``in``, ``len``.

    It lives in the task's memory; a checkpoint saves it, a rollback replaces it.
    """

    def __init__(self, data: Optional[dict] = None):
        self._data: dict = data if data is not None else {}

    def get(self, key: object, default: object = None) -> Any:
        return self._data.get(key, default)

    def put(self, key: object, value: object) -> None:
        self._data[key] = value

    def delete(self, key: object) -> None:
        """Remove ``key`` (no error when it is absent)."""
        self._data.pop(key, None)

    def items(self) -> Iterator[tuple]:
        return iter(list(self._data.items()))

    def keys(self) -> Iterator[Any]:
        return iter(list(self._data))

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"KeyValueState({len(self._data)} keys)"


class _Stateful:
    """What stateful components share: the hooks of a checkpoint's life."""

    def init_state(self, state: KeyValueState) -> None:
        """The task's state: empty at the first start, else what the last complete checkpoint saved.
        Called after ``initialize`` and before any tuple, and again on every rollback."""

    def pre_save(self, checkpoint_id: int) -> None:
        """The state is about to be saved for ``checkpoint_id`` (put what is not yet in it)."""

    def post_save(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` is complete: every task saved its state. A sink commits the
        output it held since the previous checkpoint here (two-phase commit), so only output of
        complete checkpoints is seen outside the topology."""


class StatefulBolt(_Stateful, Bolt):
    """A bolt whose state survives failures and rescaling (``init_state``, ``pre_save``, ``post_save``)."""


class StatefulSpout(_Stateful, Spout):
    """A spout whose position is its state: restored, it resumes where the checkpoint was taken.
    At EFFECTIVELY_ONCE every spout must be one (a rollback rewinds the sources).

    Its state is its task's own, so its parallelism cannot change, unless the class sets ``rescalable``:
    then its state is keyed by the units of its source that a task reads (a Kafka partition, a file), and
    after a parallelism change every task gets the keys of every task's saved state (Flink's union
    state) and keeps those of the units it now reads."""

    rescalable = False


def is_stateful(cls: type) -> bool:
    return isinstance(cls, type) and issubclass(cls, _Stateful)


def checkpointing(topology: schema.Topology, config: Mapping[str, object]) -> bool:
    """Whether a topology runs checkpoints: at EFFECTIVELY_ONCE, or when a component is stateful."""
    return config["topology.reliability.mode"] == "EFFECTIVELY_ONCE" or any(c.stateful for c in topology.components)


def check_stateful(topology: schema.Topology, base: Optional[Config] = None) -> None:
    """What a stateful topology needs, against the configuration a run really gets: at
    EFFECTIVELY_ONCE every spout is a ``StatefulSpout`` (a rollback rewinds the sources); a stateful
    component has no more tasks than key groups; at ATLEAST_ONCE the checkpoint interval is below the
    message timeout. A ``TopologyError`` names the component or the keys."""
    config = topology_config(topology, base)
    mode = config["topology.reliability.mode"]
    interval, timeout = config["topology.state.checkpoint.interval.secs"], config["topology.message.timeout.secs"]
    if mode == "ATLEAST_ONCE" and any(c.stateful for c in topology.components) and interval >= timeout:
        raise TopologyError(f"topology.state.checkpoint.interval.secs is {interval:g} and topology.message.timeout.secs "
                            f"{timeout:g}: at ATLEAST_ONCE a stateful bolt holds its acks until the next checkpoint, so "
                            "its tuples would time out and replay for ever; keep the interval below the timeout")
    for c in topology.components:
        where = f"components.{c.name}"
        if mode == "EFFECTIVELY_ONCE" and c.kind == SPOUT and not c.stateful:
            raise TopologyError(f"{where}: topology.reliability.mode is EFFECTIVELY_ONCE, so every spout must be a "
                                f"squall.StatefulSpout (a rollback resumes spouts from their saved position); "
                                f"{c.class_name} is not")
        if c.stateful:
            groups = component_config(topology, c.name, base)["squall.state.key.groups"]
            if c.parallelism > groups:
                raise TopologyError(f"{where}: parallelism {c.parallelism} is above squall.state.key.groups "
                                    f"{groups}: a stateful component has at most one task per key group")


def check_stateful_update(current: schema.Topology, proposed: schema.Topology, base: Optional[Config] = None) -> None:
    """An update of a stateful topology: ``check_stateful``, and a stateful spout keeps its parallelism (its
    state is its tasks' positions, one per task) unless it is ``rescalable``."""
    check_stateful(proposed, base)
    before = {c.name: c for c in current.components}
    for c in proposed.components:
        old = before.get(c.name)
        if (c.stateful and c.kind == SPOUT and not c.rescalable and old is not None
                and old.parallelism != c.parallelism):
            raise TopologyError(f"components.{c.name}: a StatefulSpout's parallelism cannot change ({old.parallelism} "
                                f"-> {c.parallelism}): its state is each task's own position in its source")


# ------------------------------------------------------------------ saved form
def encode_state(state: KeyValueState, groups: int) -> bytes:
    """A task's state as saved: msgpack ``[[key group, packed key, value], ...]`` (a key packed on its
    own so that a tuple key comes back a tuple and a list value a list). ``TypeError`` names a key whose
    key or value msgpack cannot encode."""
    try:
        return _packb([[key_group(key, groups), _packb(key), value] for key, value in state._data.items()])
    except (TypeError, ValueError):
        for key, value in state._data.items():
            try:
                _packb([key, value])
            except (TypeError, ValueError) as e:
                raise TypeError(f"state key {key!r}: {e} (state holds msgpack values: numbers, str, bytes, "
                                "lists, dicts; tuples as keys)") from None
        raise


def decode_state(data: bytes) -> list:
    """``[(key group, key, value)]`` of a saved state."""
    out = []
    for group, packed, value in msgpack.unpackb(data, raw=False, strict_map_key=False):
        out.append((group, msgpack.unpackb(packed, raw=False, use_list=False), value))
    return out
