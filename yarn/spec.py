"""A topology as a Skein application: one service per container shape, one for container 0.

``build_spec`` is pure: the packing plan, the configuration and the staged
files in, a validated ``skein.ApplicationSpec`` out.

- Container shapes are YARN's (``squall.packing.yarn_shapes``: memory rounded
  up to the minimum allocation, whole vcores, at most
  ``squall.yarn.max.shapes`` of them). Each distinct shape is one service,
  ``containers-<mb>mb-<vcores>vc``, with as many instances as containers of
  that shape; container 0 (the topology master) is the service ``tmaster``.
  ``services_of`` says which service runs each container id; the scheduler
  record keeps that map, and each executor claims a free id of its service.
- ``max_restarts: -1``: Skein's budget never resets and counts preemption and
  node loss, so Skein always relaunches a failed container and Squall's
  restart policy (the application driver) decides when one fails the
  topology.
- Container 0 also runs the UI (``squall.ui.yarn``): ``squall.ui.container``
  adds it to the Skein application's web UI as the page ``squall``, so the
  application's tracking URL leads to it (docs/ui.md).
- The application master runs Squall's application driver
  (``squall.yarn.driver``) as its script: it applies the restart policy to
  containers and ends the application when the topology is killed or failed.
- Placement hints: with a view of the cluster's resource pools, each service
  asks for the nodes ``squall.packing.place`` chose for its containers, with
  ``relax_locality`` so YARN may still go elsewhere.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Mapping, Optional

import skein

from squall.idl import schema
from squall.packing import (PackingError, Placement, container_cap, normalise, tmaster_container_resources,
                            yarn_shapes)
from squall.processargs import ProcessArgs
from squall.yarn.environment import ENVIRONMENT_KEY, PythonEnvironment
from squall.yarn.staging import SHIPPED_KEY, STATE_KEY, TOPOLOGY_KEY, Staged

TMASTER_SERVICE = "tmaster"
EXECUTOR_LOG = "executor.log"
UI_LOG = "ui.log"


@dataclass(frozen=True)
class ServiceShape:
    name: str
    memory_mb: int
    vcores: int
    containers: tuple[int, ...]  # container ids this service's containers claim


def shape_service(memory_mb: int, vcores: int) -> str:
    return f"containers-{memory_mb}mb-{vcores}vc"


def parse_service(name: str) -> tuple:
    """``(memory_mb, vcores)`` of a shape service's name."""
    match = re.fullmatch(r"containers-(\d+)mb-(\d+)vc", name)
    if match is None:
        raise ValueError(f"{name!r} is not a container shape service")
    return int(match.group(1)), int(match.group(2))


def service_shapes(plan: schema.PackingPlan, config: Mapping[str, object]) -> list[ServiceShape]:
    """The services of ``plan``: ``tmaster`` for container 0, then one per normalised shape."""
    memory, vcores = normalise(tmaster_container_resources(config), config)
    for need, limit, key in ((memory, "squall.yarn.max.allocation.mb", "squall.tmaster.ram.mb"),
                             (vcores, "squall.yarn.max.allocation.vcores", "squall.tmaster.cpu")):
        if need > config[limit]:
            raise PackingError(f"topology master container 0 needs {need}, above {limit}={config[limit]}: "
                               f"lower {key}")
    out = [ServiceShape(TMASTER_SERVICE, memory, vcores, (0,))]
    for shape in yarn_shapes(plan, config).shapes:
        out.append(ServiceShape(shape_service(shape.memory_mb, shape.vcores), shape.memory_mb, shape.vcores,
                                shape.containers))
    spare = spare_shape(plan, config)
    if all(s.name != spare.name for s in out):
        out.append(spare)
    return out


def spare_shape(plan: schema.PackingPlan, config: Mapping[str, object]) -> ServiceShape:
    """The service of the largest container the packing can make (``squall.container.max.*``, or the
    worker size), within YARN's maximum allocation, with no container at submit: an update can add a
    container of any shape into it (Skein cannot add services to a running application). It costs
    nothing until used."""
    memory, vcores = normalise(container_cap(config, plan.granularity), config)
    memory = min(memory, config["squall.yarn.max.allocation.mb"])
    vcores = min(vcores, config["squall.yarn.max.allocation.vcores"])
    return ServiceShape(shape_service(memory, vcores), memory, vcores, ())


def services_of(shapes: list) -> dict:
    """container id -> service name."""
    return {cid: s.name for s in shapes for cid in s.containers}


def executor_script(topology: str, service: str, env: PythonEnvironment, ui: bool = False) -> str:
    """The service's script: claim a container id of ``service`` and run its executor; with ``ui``
    (container 0, ``squall.ui.yarn``) start the UI beside it, a page of the Skein application
    (``squall.ui.container``: it ends with the executor or its topology)."""
    ui_lines = [
        f"{shlex.quote(env.python)} -m squall.ui.container --topology {shlex.quote(topology)} "
        f'--state "$PWD/{STATE_KEY}" >> "$log_dir/{UI_LOG}" 2>&1 &',
    ] if ui else []
    args = ProcessArgs(topology, -1, f"$PWD/{STATE_KEY}", log_dir="$log_dir", service=service)
    executor = " ".join(_shell_word(word) for word in args.command(env.python))
    lines = [
        f"# Squall topology {topology}: this container claims a free container id of service {service}",
        "set -e",
        f'export PYTHONPATH="$PWD/{TOPOLOGY_KEY}${{PYTHONPATH:+:$PYTHONPATH}}"',
        'log_dir="${LOG_DIRS%%,*}"',
        *env.setup_lines(),
        *ui_lines,
        f"exec {executor} >> \"$log_dir/{EXECUTOR_LOG}\" 2>&1",
    ]
    return "\n".join(lines) + "\n"


def _shell_word(word: str) -> str:
    """``word`` for the service script: quoted, but a word that starts with a shell variable of the script
    (``$PWD``, ``$log_dir``) in double quotes, so that it is expanded."""
    if re.fullmatch(r"\$[A-Za-z_]\w*(/[\w.-]+)*", word):
        return f'"{word}"'
    return shlex.quote(word)


def driver_script(topology: str, env: PythonEnvironment) -> str:
    """The application master's script: Squall's application driver."""
    lines = [
        f"# Squall topology {topology}: the application driver (container restarts, kill, failure)",
        "set -e",
        *env.setup_lines(),
        f"exec {shlex.quote(env.python)} -m squall.yarn.driver --topology {shlex.quote(topology)} "
        f'--state "$PWD/{STATE_KEY}"',
    ]
    return "\n".join(lines) + "\n"


def _files(staged: Staged, with_topology: bool, with_shipped: bool = False) -> dict:
    files = {STATE_KEY: skein.File(staged.state_file, type="file", visibility="application")}
    if with_topology:
        files[TOPOLOGY_KEY] = skein.File(staged.topology_archive, type="archive", visibility="application")
    if staged.environment is not None:
        files[ENVIRONMENT_KEY] = skein.File(staged.environment, type="archive", visibility="application")
    if with_shipped and staged.shipped is not None:  # the tasks' containers: container 0 runs none
        files[SHIPPED_KEY] = skein.File(staged.shipped, type="archive", visibility="application")
    return files


def build_spec(
    topology: str,
    plan: schema.PackingPlan,
    config: Mapping[str, object],
    staged: Staged,
    env: PythonEnvironment,
    placement: Optional[Placement] = None,
) -> skein.ApplicationSpec:
    """The Skein application of ``plan`` (validated by Skein as it is built)."""
    services = {}
    for shape in service_shapes(plan, config):
        nodes = sorted({placement.assigned[c] for c in shape.containers if c in placement.assigned}) \
            if placement is not None else []
        services[shape.name] = skein.Service(
            resources=skein.Resources(memory=shape.memory_mb, vcores=shape.vcores),
            script=executor_script(topology, shape.name, env,
                                   ui=shape.name == TMASTER_SERVICE and bool(config["squall.ui.yarn"])),
            instances=len(shape.containers),
            files=_files(staged, with_topology=True, with_shipped=shape.name != TMASTER_SERVICE),
            max_restarts=-1,
            nodes=nodes,
            relax_locality=True,
        )
    master = skein.Master(
        resources=skein.Resources(memory=config["squall.yarn.master.memory.mb"],
                                  vcores=config["squall.yarn.master.vcores"]),
        script=driver_script(topology, env),
        files=_files(staged, with_topology=False),
    )
    return skein.ApplicationSpec(
        name=topology,
        queue=config["squall.yarn.queue"],
        node_label=config["squall.yarn.node.label"],
        tags={"squall", topology},
        services=services,
        master=master,
        max_attempts=1,
    )
