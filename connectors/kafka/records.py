"""A Kafka record's key and value as the spout emits them (``kafka.value.format``)."""
from __future__ import annotations

import json
from typing import Any, Callable, Optional

FORMATS = ("utf-8", "bytes", "json")


def _utf8(raw: bytes) -> str:
    return raw.decode("utf-8")


def _json(raw: bytes) -> Any:
    return json.loads(raw)


def _bytes(raw: bytes) -> bytes:
    return raw


def decoder(fmt: str) -> Callable[[bytes], Any]:
    """The value decoder of a format: ``UnicodeDecodeError`` / ``ValueError`` for a record it cannot read."""
    try:
        return {"utf-8": _utf8, "bytes": _bytes, "json": _json}[fmt]
    except KeyError:
        raise ValueError(f"kafka.value.format is {fmt!r}: expected one of {', '.join(FORMATS)}") from None


def key_decoder(fmt: str) -> Callable[[bytes], Any]:
    """Keys are text (utf-8) but with ``bytes``, where they stay bytes."""
    return _bytes if fmt == "bytes" else _utf8


def reason(error: Exception, what: str) -> str:
    """One line saying why a record could not be decoded."""
    return f"{what}: {type(error).__name__}: {error}"


def decode_or_none(decode: Callable[[bytes], Any], raw: Optional[bytes]) -> Any:
    """A tombstone (no value) or no key stays None."""
    return None if raw is None else decode(raw)
