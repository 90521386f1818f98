"""A topology's latest capacity report, and what applying it would change.

Reports are the folders ``squall report capacity`` writes (``report.json``
inside); the UI looks for them in one folder, ``squall.ui.reports.dir``
(default ``./squall-reports``, where ``squall report`` writes them). A report
is named by its folder's name only: nothing a request sends becomes a path
outside that folder. Applying one goes through ``from_report.read_update``
and ``actions.update``, as ``squall update --from-report`` does.
"""
from __future__ import annotations

import json
import os
from typing import Any, Optional

from squall.conf import Config
from squall.errors import SquallError
from squall.scheduler import changes, from_report, manager
from squall.state import StateManager
from squall.ui.views import NotFound

# what the page shows of each recommendation, in this order (the rest is in the JSON)
COLUMNS = ("component", "kind", "parallelism", "recommended_parallelism", "target_rate", "capacity_per_instance",
           "predicted_throughput", "allocated_cpu_cores", "recommended_cpu_cores", "ram_p95_mb",
           "recommended_ram_mb", "symptoms", "notes")


def reports_dir(config: Config) -> str:
    return config["squall.ui.reports.dir"] or os.path.join(os.getcwd(), "squall-reports")


def _reads(path: str) -> Optional[dict]:
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def latest(folder: str, name: str) -> Optional[str]:
    """The newest capacity report of topology ``name`` in ``folder`` (its folder's name), or None."""
    found = []
    try:
        entries = os.listdir(folder)
    except OSError:
        return None
    for entry in entries:
        path = os.path.join(folder, entry, "report.json")
        data = _reads(path) if os.path.isfile(path) else None
        if data and data.get("kind") == "capacity" and (data.get("facts") or {}).get("topology") == name:
            found.append((os.path.getmtime(path), entry))
    return max(found)[1] if found else None


def report_path(folder: str, report_id: str) -> str:
    """The folder of report ``report_id``: a folder name in ``folder``, never a path."""
    if not report_id or report_id != os.path.basename(report_id) or report_id in (".", ".."):
        raise NotFound(f"report {report_id!r}: name a report folder in {folder}")
    path = os.path.join(folder, report_id)
    if not os.path.isfile(os.path.join(path, "report.json")):
        raise NotFound(f"report {report_id!r}: no report.json in {path}")
    return path


def capacity(state: StateManager, name: str, base: Config, folder: str) -> dict:
    """The latest report of ``name``: its facts and recommendations, and the dry run of applying it."""
    manager.running(state, name)
    report_id = latest(folder, name)
    if report_id is None:
        return {"topology": name, "report": None, "folder": folder,
                "message": f"no capacity report of topology {name!r} in {folder} (write one with squall report "
                           f"capacity --metrics ... --out {folder}/<name>)"}
    path = report_path(folder, report_id)
    data = _reads(os.path.join(path, "report.json")) or {}
    rows = (data.get("tables") or {}).get("recommendations") or []
    out: dict = {
        "topology": name, "folder": folder,
        "report": {"id": report_id, "path": path, "title": data.get("title"), "facts": data.get("facts") or {},
                   "parameters": data.get("parameters") or {}, "recommendations": rows,
                   "columns": [c for c in COLUMNS if any(c in r for r in rows)]},
    }
    try:
        planned = plan_report(state, name, base, path)
        out["dry_run"] = {"lines": changes.describe(planned), "diff": changes.diff_json(planned),
                          "changed": planned.changed}
    except SquallError as e:
        out["dry_run"] = {"error": str(e)}
    return out


def plan_report(state: StateManager, name: str, base: Config, path: str) -> Any:
    """``manager.plan`` of the report at ``path``: the dry run ``squall update --from-report`` prints."""
    return manager.plan(state, name, from_report.read_update(path, name), base)
