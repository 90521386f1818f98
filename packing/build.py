"""Turning an assignment of instances to containers into the Thrift PackingPlan.

Canonical form: containers by id, instances by task id, CPU in whole
millicores. The plan id is a digest of the content, so the same input gives the
same plan byte for byte and a changed plan gets a new id.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

from squall.idl import schema
from squall.packing.request import Request
from squall.packing.resources import Res


def build_plan(request: Request, assignment: list) -> Any:
    """``assignment``: ``[(container_id, [(component, task_id, index), ...])]``."""
    sizes = request.sizes
    thrift_sizes = {name: size.to_thrift() for name, size in sizes.items()}
    containers = []
    digest = hashlib.sha1(f"{request.topology_name}|{request.algorithm}|{request.granularity}|".encode())
    for name in sorted(sizes):
        digest.update(f"{name}={sizes[name]};".encode())
    for container_id, members in sorted(assignment, key=lambda a: a[0]):
        members = sorted(members, key=lambda m: m[1])
        used = Res()
        for name, count in sorted(Counter(m[0] for m in members).items()):
            used = used + sizes[name].times(count)
        padding = request.padding.of(used)
        resources = request.container_resources(used)
        digest.update(f"#{container_id}:{resources}:{padding}:".encode())
        digest.update(",".join(f"{m[0]}/{m[1]}/{m[2]}" for m in members).encode())
        containers.append(
            schema.ContainerPlan(
                id=container_id,
                instances=[
                    schema.InstancePlan(
                        id=schema.InstanceId(component=m[0], task_id=m[1], component_index=m[2]),
                        resources=thrift_sizes[m[0]],
                    )
                    for m in members
                ],
                resources=resources.to_thrift(),
                padding=padding.to_thrift(),
            )
        )
    return schema.PackingPlan(
        id=f"{request.topology_name}-{digest.hexdigest()[:16]}",
        containers=containers,
        algorithm=request.algorithm,
        granularity=request.granularity,
    )
