"""Packing: placing a topology's tasks into containers (pure functions, no I/O).

The model is the Thrift IDL's ``Resources``, ``InstanceId``, ``InstancePlan``,
``ContainerPlan`` and ``PackingPlan``; see docs/packing.md.
"""
from squall.packing.errors import PackingError
from squall.packing.jsonplan import plan_from_json, plan_to_json
from squall.packing.pack import container_cap, pack, tmaster_container_resources
from squall.packing.pool import Amount, NodePool, Placement, PoolSample, place
from squall.packing.repack import (PlanDiff, diff_plans, renumber_containers, repack, with_component_config,
                                   with_parallelism)
from squall.packing.summary import plan_summary
from squall.packing.validate import validate_plan
from squall.packing.yarn import YarnShape, YarnShapes, normalise, yarn_shapes

__all__ = [
    "container_cap",
    "Amount",
    "NodePool",
    "PackingError",
    "Placement",
    "PoolSample",
    "YarnShape",
    "YarnShapes",
    "normalise",
    "place",
    "plan_summary",
    "yarn_shapes",
    "PlanDiff",
    "diff_plans",
    "renumber_containers",
    "repack",
    "with_component_config",
    "with_parallelism",
    "pack",
    "plan_from_json",
    "plan_to_json",
    "tmaster_container_resources",
    "validate_plan",
]
