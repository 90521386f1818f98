"""The JSON form of a packing plan (``squall pack --json``, ``packing_plan.json``).

Derived from the Thrift structs' own specs in both directions, so a field
added to the IDL appears here without anyone editing a converter. The one
shaping rule: an instance's ``id`` struct is flattened into the instance
(``{"component", "task_id", "component_index", "resources"}``).
"""
from __future__ import annotations

from typing import Mapping

from thriftpy2.thrift import TType

from squall.idl import schema


def _fields(obj: object) -> list:
    """``[(name, ttype, type_args)]`` of a struct class or instance, in field-id order."""
    return [(spec[1], spec[0], spec[2] if len(spec) == 4 else None) for _, spec in sorted(obj.thrift_spec.items())]


def _to_json(obj: object) -> object:
    if hasattr(obj, "thrift_spec"):
        out: dict = {}
        for name, _, _ in _fields(obj):
            value = getattr(obj, name)
            if value is None:
                continue
            if type(obj) is schema.InstancePlan and name == "id":
                out.update(_to_json(value))
            else:
                out[name] = _to_json(value)
        return out
    if isinstance(obj, list):
        return [_to_json(v) for v in obj]
    return obj


def _from_json(cls: type, data: Mapping[str, object]) -> object:
    values = {}
    for name, ttype, args in _fields(cls):
        if cls is schema.InstancePlan and name == "id":
            values[name] = _from_json(schema.InstanceId, data)
            continue
        if name not in data:
            continue
        values[name] = _value(ttype, args, data[name])
    return cls(**values)


def _value(ttype: int, args: object, value: object) -> object:
    if ttype == TType.STRUCT:
        return _from_json(args, value)
    if ttype == TType.LIST:
        item_type, item_args = (args[0], args[1]) if isinstance(args, tuple) else (args, None)
        return [_value(item_type, item_args, v) for v in value]
    if ttype == TType.DOUBLE:
        return float(value)
    if ttype in (TType.I16, TType.I32, TType.I64, TType.BYTE):
        return int(value)
    return value


def plan_to_json(topology_name: str, plan: schema.PackingPlan) -> dict:
    """``{"topology", "id", "algorithm", "granularity", "containers": [{"id",
    "instances": [{"component", "task_id", "component_index", "resources"}],
    "resources": {"cpu", "ram_mb", "disk_mb"}, "padding"}]}``."""
    body = _to_json(plan)
    return {
        "topology": topology_name,
        "id": body.pop("id"),
        "algorithm": body.pop("algorithm"),
        "granularity": body.pop("granularity"),
        **body,
    }


def plan_from_json(data: Mapping[str, object]) -> tuple:
    """The inverse of ``plan_to_json``: ``(topology_name, PackingPlan)``."""
    return data["topology"], _from_json(schema.PackingPlan, data)
