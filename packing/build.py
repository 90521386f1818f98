"""Turning an assignment of instances to containers into the Thrift PackingPlan.

Canonical form: containers by id, instances by task id, CPU in whole
millicores. The plan id is a digest of the content, so the same input gives the
same plan byte for byte and a changed plan gets a new id.
"""
from __future__ import annotations

import hashlib

from squall.idl import schema
from squall.packing.request import Request
from squall.resources import Res


def build_plan(request: Request, assignment: list) -> schema.PackingPlan:
    """``assignment``: ``[(container_id, [(component, task_id, index), ...], used)]``
    where ``used`` is the sum of the instances' sizes (``Bins.assignment()``).

    Equal Resources values share one struct: treat plans as values, never
    mutate them in place."""
    sizes = request.sizes
    thrift_sizes = {name: size.to_thrift() for name, size in sizes.items()}
    containers = []
    digest = hashlib.sha1(f"{request.topology_name}|{request.algorithm}|{request.granularity}|".encode())
    for name in sorted(sizes):
        digest.update(f"{name}={sizes[name]};".encode())
    ContainerPlan, InstancePlan, InstanceId = schema.ContainerPlan, schema.InstancePlan, schema.InstanceId
    shared: dict = {}  # one Resources struct per distinct value

    def thrift(res: Res) -> schema.Resources:
        t = shared.get(res)
        if t is None:
            t = shared[res] = res.to_thrift()
        return t

    for container_id, members, used in sorted(assignment, key=lambda a: a[0]):
        members = sorted(members, key=lambda m: m[1])
        padding = request.padding.of(used)
        resources = request.container_resources(used)
        digest.update(f"#{container_id}:{resources!r}:{padding!r}:{members!r}".encode())
        containers.append(
            ContainerPlan(
                id=container_id,
                instances=[InstancePlan(InstanceId(m[0], m[1], m[2]), thrift_sizes[m[0]]) for m in members],
                resources=thrift(resources),
                padding=thrift(padding),
            )
        )
    return schema.PackingPlan(
        id=f"{request.topology_name}-{digest.hexdigest()[:16]}",
        containers=containers,
        algorithm=request.algorithm,
        granularity=request.granularity,
    )
