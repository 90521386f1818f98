"""Streams and groupings: what a component emits and how consumers receive it."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from squall.importing import import_object, qualified_name

DEFAULT_STREAM = "default"


@dataclass(frozen=True)
class Stream:
    """A declared output stream: its name, its fields and whether it is direct."""

    fields: Sequence[str]
    name: str = DEFAULT_STREAM
    direct: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.fields, str) or not all(isinstance(f, str) for f in self.fields):
            raise ValueError(f"stream {self.name!r}: fields must be a list of names, got {self.fields!r}")
        if len(set(self.fields)) != len(self.fields):
            raise ValueError(f"stream {self.name!r}: duplicate field names in {list(self.fields)}")
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"stream name must be a non-empty string, got {self.name!r}")
        object.__setattr__(self, "fields", tuple(self.fields))


@dataclass(frozen=True)
class GroupingSpec:
    """One grouping: a kind (the IDL's GroupingKind name), its fields or custom object."""

    kind: str
    fields: tuple = ()
    custom: Optional[Any] = field(default=None, compare=False)

    def __repr__(self) -> str:
        if self.fields:
            return f"Grouping.{self.kind.lower()}({', '.join(map(repr, self.fields))})"
        return f"Grouping.{self.kind}"


class CustomGrouping:
    """Base for custom groupings (subclassing is optional; the two methods are not).

    An instance is shipped to every sending task as its class name plus its
    attributes as JSON; ``__init__`` is not called again there.
    """

    def prepare(self, context: Any, component: str, stream: str, target_tasks: list) -> None:
        self.target_tasks = list(target_tasks)

    def choose_tasks(self, values: list) -> list:
        raise NotImplementedError


def _field_names(kind: str, names: Sequence[str]) -> tuple:
    if len(names) == 1 and isinstance(names[0], (list, tuple)):
        names = tuple(names[0])
    if not names or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{kind.lower()} grouping needs one or more field names, got {list(names)!r}")
    return tuple(names)


class Grouping:
    """The groupings of Storm and Heron: constants plus constructors."""

    SHUFFLE = GroupingSpec("SHUFFLE")
    ALL = GroupingSpec("ALL")
    GLOBAL = GroupingSpec("GLOBAL")
    LOWEST = GLOBAL  # heronpy's name
    NONE = GroupingSpec("NONE")
    DIRECT = GroupingSpec("DIRECT")
    LOCAL_OR_SHUFFLE = GroupingSpec("LOCAL_OR_SHUFFLE")

    @staticmethod
    def fields(*names: str) -> GroupingSpec:
        """Tuples with equal values of ``names`` go to the same task."""
        return GroupingSpec("FIELDS", _field_names("FIELDS", names))

    @staticmethod
    def partial_key(*names: str) -> GroupingSpec:
        """Each key goes to the less loaded of two candidate tasks."""
        return GroupingSpec("PARTIAL_KEY", _field_names("PARTIAL_KEY", names))

    @staticmethod
    def custom(obj: object) -> GroupingSpec:
        """An object with ``prepare(context, component, stream, target_tasks)`` and
        ``choose_tasks(values)``, a class of such objects, or its ``module:Class`` name."""
        return GroupingSpec("CUSTOM", custom=obj)


def encode_custom(obj: object, what: str) -> tuple[str, str]:
    """``(class_name, state_json)`` for a custom grouping object, class or name."""
    if isinstance(obj, str):
        try:
            obj = import_object(obj)
        except (ImportError, AttributeError, ValueError) as e:
            raise ValueError(f"{what}: custom grouping {obj!r} cannot be imported ({e})") from e
    cls = obj if isinstance(obj, type) else type(obj)
    for method in ("prepare", "choose_tasks"):
        if not callable(getattr(cls, method, None)):
            raise ValueError(f"{what}: custom grouping {cls.__qualname__} has no {method}() method")
    name = qualified_name(cls, what)
    state = {} if isinstance(obj, type) else vars(obj)
    try:
        state_json = json.dumps(state, sort_keys=True)
    except TypeError as e:
        raise ValueError(
            f"{what}: custom grouping {cls.__qualname__}'s attributes must be JSON values ({e})"
        ) from e
    return name, state_json


def decode_custom(class_name: str, state_json: str) -> Any:
    """Rebuild a custom grouping object in another process."""
    cls = import_object(class_name)
    obj = cls.__new__(cls)
    obj.__dict__.update(json.loads(state_json))
    return obj
