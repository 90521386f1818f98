"""Building Thrift topologies for packing tests without user classes."""
from __future__ import annotations

import json
from typing import Any, Mapping, Optional, Sequence

from squall.idl import schema


def comp(name: str, par: int, cpu: Optional[float] = None, ram: Optional[int] = None,
         disk: Optional[int] = None, inputs: Sequence[str] = ()) -> dict:
    config = {}
    if cpu is not None:
        config["squall.component.cpu"] = cpu
    if ram is not None:
        config["squall.component.ram.mb"] = ram
    if disk is not None:
        config["squall.component.disk.mb"] = disk
    return {"name": name, "par": par, "config": config, "inputs": list(inputs)}


def topo(components: Sequence[dict], config: Optional[Mapping[str, Any]] = None, name: str = "t") -> Any:
    """A topology of ``components`` (shuffle edges). Chaining is off unless ``config`` says: these
    tests look at the algorithms on tasks; chains as units are test_packing_chains.py's."""
    config = {"squall.chaining": "off", **(config or {})}
    return schema.Topology(
        name=name,
        components=[
            schema.Component(
                name=c["name"],
                kind=schema.ComponentKind.BOLT if c["inputs"] else schema.ComponentKind.SPOUT,
                class_name="mod:Cls",
                parallelism=c["par"],
                outputs=[schema.StreamSchema(name="default", fields=["x"], direct=False)],
                inputs=[
                    schema.InputStream(component=u, stream="default", grouping=schema.GroupingKind.SHUFFLE, fields=[])
                    for u in c["inputs"]
                ],
                config={k: json.dumps(v) for k, v in c["config"].items()},
            )
            for c in components
        ],
        config={k: json.dumps(v) for k, v in config.items()},
        overrides={},
    )


def layout(plan: Any) -> list:
    """``[(container id, ["comp index", ...])]`` for exact comparisons."""
    return [(c.id, [f"{i.id.component}{i.id.component_index}" for i in c.instances]) for c in plan.containers]


def res(r: Any) -> tuple:
    return (r.cpu, r.ram_mb, r.disk_mb)
