"""``squall update NAME --from-report DIR [--dry-run]``: apply a capacity report to a running topology.

Reads the report's ``report.json`` (``squall report capacity`` writes it; its
``tables.recommendations`` rows carry ``component`` and
``recommended_parallelism``) directly: the scheduler layer does not import the
reports. Prints the difference first, then scales through ``manager.update``.
Resources cannot change on a running topology (the update path repacks for
new parallelism only): a report's cpu/ram changes are shown, not applied.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from squall.commandline import print_json
from squall.conf import Config
from squall.errors import SquallError
from squall.scheduler import manager
from squall.state import Kind, StateManager


@dataclass(frozen=True)
class Recommendation:
    component: str
    parallelism: int
    cpu: Optional[float]
    ram_mb: Optional[int]


@dataclass(frozen=True)
class Change:
    component: str
    what: str  # "parallelism" | "cpu" | "ram_mb"
    before: Any
    after: Any

    @property
    def applied(self) -> bool:
        return self.what == "parallelism"


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


def changes(state: StateManager, name: str, recs: list) -> list:
    """What the report changes in the running topology: parallelism, then cpu and ram per instance."""
    topology = state.get(Kind.TOPOLOGY, name)
    plan = state.get(Kind.PACKING_PLAN, name)
    current = {c.name: c.parallelism for c in topology.components}
    unknown = sorted(r.component for r in recs if r.component not in current)
    if unknown:
        raise SquallError(f"the report names components topology {name!r} does not have: {', '.join(unknown)}")
    resources = {i.id.component: i.resources for c in plan.containers for i in c.instances}
    out = []
    for r in recs:
        if r.parallelism != current[r.component]:
            out.append(Change(r.component, "parallelism", current[r.component], r.parallelism))
        res = resources.get(r.component)
        if res is not None and r.cpu is not None and abs(r.cpu - res.cpu) > 1e-9:
            out.append(Change(r.component, "cpu", res.cpu, r.cpu))
        if res is not None and r.ram_mb is not None and r.ram_mb != res.ram_mb:
            out.append(Change(r.component, "ram_mb", res.ram_mb, r.ram_mb))
    return out


def run(state: StateManager, name: str, path: str, base: Config, dry_run: bool, as_json: bool) -> int:
    """Check the report, print the difference, then (unless ``dry_run``) scale the topology."""
    topology, recs = read_report(path)
    if topology != name:
        raise SquallError(f"--from-report {path} was made for topology {topology!r}, not {name!r}")
    manager.running(state, name)
    found = changes(state, name, recs)
    parallelism = {c.component: c.after for c in found if c.applied}
    if not as_json:
        print(f"changes to topology {name!r} from {path}:" if found else
              f"topology {name!r} already runs as {path} recommends: nothing to change")
        for line in diff_lines(found):
            print(line)
        sys.stdout.flush()
    applied = bool(parallelism) and not dry_run
    if applied:
        manager.update(state, name, parallelism, base)
    resources = [c for c in found if not c.applied]
    if as_json:
        print_json({"topology": name, "report": path, "dry_run": dry_run, "applied": applied,
                    "changes": [{"component": c.component, "what": c.what, "before": c.before, "after": c.after,
                                 "applied": applied and c.applied} for c in found]})
        return 0
    if dry_run:
        print("dry run: nothing applied")
    elif applied:
        print(f"updated topology {name!r}: " + ", ".join(f"{k}={v}" for k, v in sorted(parallelism.items())))
    if resources:
        print(f"not applied: {len(resources)} resource change(s); resources cannot change on a running topology "
              "(update repacks for parallelism only): set squall.component.cpu / squall.component.ram.mb in the "
              "component's config and resubmit")
    return 0


def diff_lines(changes: list) -> list:
    units = {"parallelism": "", "cpu": " cores", "ram_mb": " MiB"}
    return [f"  {c.component:<16} {c.what:<12} {c.before:g} -> {c.after:g}{units[c.what]}"
            + ("" if c.applied else "  (not applied: resources)") for c in changes]
