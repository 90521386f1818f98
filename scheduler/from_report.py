"""``squall update NAME --from-report DIR``: a capacity report's recommendations as an update.

Reads the report's ``report.json`` (``squall report capacity`` writes it; its
``tables.recommendations`` rows carry ``component``,
``recommended_parallelism`` and, where the report has them,
``recommended_cpu_cores`` and ``recommended_ram_mb``) directly: the scheduler
layer does not import the reports. The result is a ``TopologyUpdate`` that
``squall update`` shows and applies like any other.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from squall.errors import SquallError
from squall.scheduler.changes import TopologyUpdate


@dataclass(frozen=True)
class Recommendation:
    component: str
    parallelism: int
    cpu: Optional[float]
    ram_mb: Optional[int]


def read_report(path: str) -> tuple:
    """``(topology, [Recommendation])`` from a capacity report folder (or its report.json)."""
    file = os.path.join(path, "report.json") if os.path.isdir(path) else path
    try:
        with open(file) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise SquallError(f"--from-report {path}: no report.json there (write one with squall report capacity)") \
            from None
    except OSError as e:
        raise SquallError(f"--from-report {path}: cannot read {file}: {e.strerror}") from e
    except ValueError as e:
        raise SquallError(f"--from-report {path}: {file} is not valid JSON: {e}") from e
    if not isinstance(data, dict) or data.get("kind") != "capacity":
        raise SquallError(f"--from-report {path}: {file} is not a capacity report (kind "
                          f"{data.get('kind') if isinstance(data, dict) else None!r})")
    topology = (data.get("facts") or {}).get("topology")
    rows = (data.get("tables") or {}).get("recommendations")
    if not isinstance(topology, str) or not isinstance(rows, list):
        raise SquallError(f"--from-report {path}: {file} has no facts.topology or tables.recommendations")
    return topology, [_recommendation(row, i, file) for i, row in enumerate(rows)]


def _recommendation(row: Any, i: int, file: str) -> Recommendation:
    at = f"{file}: tables.recommendations[{i}]"
    if not isinstance(row, Mapping) or not isinstance(row.get("component"), str):
        raise SquallError(f"{at}.component: expected a component name")
    par = row.get("recommended_parallelism")
    if isinstance(par, bool) or not isinstance(par, int) or par < 1:
        raise SquallError(f"{at}.recommended_parallelism: expected an integer >= 1, got {par!r}")
    cpu, ram = row.get("recommended_cpu_cores"), row.get("recommended_ram_mb")
    for key, value in (("recommended_cpu_cores", cpu), ("recommended_ram_mb", ram)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise SquallError(f"{at}.{key}: expected a number > 0 or null, got {value!r}")
    return Recommendation(row["component"], par, None if cpu is None else float(cpu),
                          None if ram is None else int(ram))


def as_update(recs: list) -> TopologyUpdate:
    """The report's recommendations as an update: parallelism, and cpu and ram per instance where the
    report recommends them."""
    sizes: dict = {}
    for r in recs:
        size = {}
        if r.cpu is not None:
            size["squall.component.cpu"] = r.cpu
        if r.ram_mb is not None:
            size["squall.component.ram.mb"] = r.ram_mb
        if size:
            sizes[r.component] = size
    return TopologyUpdate(parallelism={r.component: r.parallelism for r in recs}, component_config=sizes)


def read_update(path: str, name: str) -> TopologyUpdate:
    """The update the capacity report at ``path`` recommends for topology ``name``."""
    topology, recs = read_report(path)
    if topology != name:
        raise SquallError(f"--from-report {path} was made for topology {topology!r}, not {name!r}")
    return as_update(recs)
