"""How a tuple becomes a Kafka record (pure): the key from ``kafka.key.field``, the value from
``kafka.value.field`` or, by default, the whole tuple as a JSON object of field -> value.

A field's value goes out as is when it is ``bytes``, UTF-8 when it is a ``str``, JSON otherwise.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Optional, Sequence

Record = tuple  # (key: bytes | None, value: bytes)


def to_bytes(value: Any) -> Optional[bytes]:
    """A field value as record bytes: bytes as is, str as UTF-8, None as None (a null key or a tombstone),
    anything else as JSON."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def encoder(fields: Sequence[str], key_field: Optional[str], value_field: Optional[str]) -> Callable[[Sequence[Any]], Record]:
    """A function from a tuple's values (in ``fields`` order) to its ``(key, value)`` record.
    ``ValueError`` names a key or value field the input stream does not have."""
    fields = list(fields)
    for key, field in (("kafka.key.field", key_field), ("kafka.value.field", value_field)):
        if field is not None and field not in fields:
            raise ValueError(f"{key} is {field!r}, but the input tuples have the fields {fields}")
    k = fields.index(key_field) if key_field is not None else None
    if value_field is not None:
        v = fields.index(value_field)
        if k is None:
            return lambda values: (None, to_bytes(values[v]))
        return lambda values: (to_bytes(values[k]), to_bytes(values[v]))
    dumps = json.JSONEncoder(separators=(",", ":"), default=_default).encode

    def whole(values: Sequence[Any]) -> Record:
        return (to_bytes(values[k]) if k is not None else None,
                dumps(dict(zip(fields, values))).encode("utf-8"))
    return whole


def _default(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"a tuple value of type {type(value).__name__} cannot be written as JSON")
