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


def yarn_cost(t: Any, plan: Any) -> Any:
    """What YARN grants ``plan``'s containers, memory and vcores each as a share of ``t``'s largest
    container, summed (``packing.auto.yarn_cost``, the objective of ``auto``)."""
    from fractions import Fraction

    from squall.conf import base_config
    from squall.packing.request import build_request
    from squall.packing.resources import Res
    from squall.packing.yarn import granted

    request = build_request(t, base_config())
    total = Fraction(0)
    for c in plan.containers:
        memory, vcores = granted(Res.from_thrift(c.resources), request.yarn_step_mb)
        total += Fraction(memory, max(1, request.cap.ram)) + Fraction(1000 * vcores, max(1, request.cap.cpu))
    return total
