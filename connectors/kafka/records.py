"""Kafka records as the connectors see them (pure).

Read (``KafkaSpout``, ``kafka.value.format``): a value decoded as UTF-8 text, kept as bytes, or parsed as
JSON; a key as text (bytes with ``bytes``).

Written (``KafkaBolt``): the key from ``kafka.key.field``, the value from ``kafka.value.field`` or, by
default, the whole tuple as a JSON object of field -> value. A field's value goes out as is when it is
``bytes``, UTF-8 when it is a ``str``, JSON otherwise.
"""
from __future__ import annotations

import json
from typing import Callable, Optional, Sequence

FORMATS = ("utf-8", "bytes", "json")
Record = tuple  # (key: bytes | None, value: bytes)


# ------------------------------------------------------------------ read
def _utf8(raw: bytes) -> str:
    return raw.decode("utf-8")


def _json(raw: bytes) -> object:
    return json.loads(raw)


def _bytes(raw: bytes) -> bytes:
    return raw


def decoder(fmt: str) -> Callable[[bytes], object]:
    """The value decoder of a format: ``UnicodeDecodeError`` / ``ValueError`` for a record it cannot read."""
    try:
        return {"utf-8": _utf8, "bytes": _bytes, "json": _json}[fmt]
    except KeyError:
        raise ValueError(f"kafka.value.format is {fmt!r}: expected one of {', '.join(FORMATS)}") from None


def key_decoder(fmt: str) -> Callable[[bytes], object]:
    """Keys are text (utf-8) but with ``bytes``, where they stay bytes."""
    return _bytes if fmt == "bytes" else _utf8


def reason(error: Exception, what: str) -> str:
    """One line saying why a record could not be decoded."""
    return f"{what}: {type(error).__name__}: {error}"


def decode_or_none(decode: Callable[[bytes], object], raw: Optional[bytes]) -> object:
    """A tombstone (no value) or no key stays None."""
    return None if raw is None else decode(raw)


# ------------------------------------------------------------------ written
def to_bytes(value: object) -> Optional[bytes]:
    """A field value as record bytes: bytes as is, str as UTF-8, None as None (a null key or a tombstone),
    anything else as JSON."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def encoder(fields: Sequence[str], key_field: Optional[str], value_field: Optional[str]) -> Callable[[Sequence[object]], Record]:
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

    def whole(values: Sequence[object]) -> Record:
        return (to_bytes(values[k]) if k is not None else None,
                dumps(dict(zip(fields, values))).encode("utf-8"))
    return whole


def _default(value: object) -> object:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"a tuple value of type {type(value).__name__} cannot be written as JSON")
