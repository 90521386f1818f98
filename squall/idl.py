"""The project's Thrift schema (``squall.thrift``), loaded once with thriftpy2.

Every plan that is stored or sent is one of these structs; ``encode`` and
``decode`` are the only serialisation, so nothing can drift from the IDL.
"""
from __future__ import annotations

from typing import Any, TypeVar

import thriftpy2
from thriftpy2.protocol import TCompactProtocolFactory
from thriftpy2.thrift import TType
from thriftpy2.utils import deserialize, serialize

from squall import idl_cache


def _load() -> Any:
    """The schema from thriftpy2's parse kept in squall_thrift.json when it is of this IDL and this
    thriftpy2 (a third of a process's start saved), else from thriftpy2's parse."""
    kept = idl_cache.read(idl_cache.CACHE, idl_cache.digest(), thriftpy2.__version__)
    if kept is not None:
        return idl_cache.restore(kept, "squall_thrift", idl_cache.IDL)
    return thriftpy2.load(idl_cache.IDL, module_name="squall_thrift")


schema = _load()

_PROTOCOL = TCompactProtocolFactory()

T = TypeVar("T")


class DecodeError(ValueError):
    """Bytes that are not a valid encoding of the expected struct."""


def encode(struct: Any) -> bytes:
    """Serialise a struct of the schema in Thrift's compact encoding."""
    return serialize(struct, _PROTOCOL)


def decode(struct_type: type[T], data: bytes) -> T:
    """Deserialise ``data`` into a new ``struct_type``, checking required fields."""
    try:
        obj = deserialize(struct_type(), data, _PROTOCOL)
    except Exception as e:  # thriftpy2 raises several types for garbage input
        raise DecodeError(f"not a valid {struct_type.__name__}: {e}") from e
    _check_required(obj, struct_type.__name__)
    return obj


def _check_required(obj: Any, path: str) -> None:
    for spec in obj.thrift_spec.values():
        ttype, name, required = spec[0], spec[1], spec[-1]
        value = getattr(obj, name)
        if value is None:
            if required is True:
                raise DecodeError(f"{path}.{name} is required but missing")
            continue
        if ttype == TType.STRUCT:
            _check_required(value, f"{path}.{name}")
        elif ttype == TType.LIST and isinstance(spec[2], tuple) and spec[2][0] == TType.STRUCT:
            for i, item in enumerate(value):
                _check_required(item, f"{path}.{name}[{i}]")


def replace(struct: T, **changes: Any) -> T:
    """A shallow copy of a struct with some fields changed (like dataclasses.replace)."""
    fields = {spec[1]: getattr(struct, spec[1]) for spec in struct.thrift_spec.values()}
    unknown = set(changes) - set(fields)
    if unknown:
        raise TypeError(f"{type(struct).__name__} has no field {sorted(unknown)[0]!r}")
    fields.update(changes)
    return type(struct)(**fields)
