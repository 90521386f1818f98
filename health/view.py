"""What the CLI, the REST API and the UI show of a topology's health, and the operators' two changes
(the mode, applying the pending recommendation): written once, here."""
from __future__ import annotations

from typing import Optional, Sequence

from squall.errors import SquallError
from squall.health.model import Decision
from squall.health.store import Control, HealthStore, Report
from squall.logical import topology_config
from squall.scheduler.manager import running
from squall.state import Kind, StateManager


def configured_mode(state: StateManager, name: str) -> str:
    """``squall.health.mode`` of the running topology's config."""
    running(state, name)
    return str(topology_config(state.get(Kind.TOPOLOGY, name))["squall.health.mode"])


def health_view(state: StateManager, name: str) -> dict:
    """The mode (asked and in effect), the symptoms now, the pending recommendation and the history,
    newest decision first."""
    mode = configured_mode(state, name)
    store = HealthStore(state, name)
    control, report = store.control(), store.report()
    pending = report.pending()
    return {
        "topology": name,
        "mode": control.effective_mode(mode),
        "configured_mode": mode,
        "observed_at": report.time or None,
        "symptoms": dict(report.symptoms),
        "pending": pending.to_json() if pending is not None else None,
        "apply_requested": control.apply,
        "actions": action_counts(report.history),
        "parallelism": [[t, dict(p)] for t, p in report.parallelism],
        "history": [d.to_json() for d in reversed(report.history)],
    }


def action_counts(history: Sequence[Decision]) -> dict:
    """action kind -> status -> decisions in ``history`` (the kept ones)."""
    counts: dict = {}
    for d in history:
        by_status = counts.setdefault(d.action.kind, {})
        by_status[d.status] = by_status.get(d.status, 0) + 1
    return counts


def set_mode(state: StateManager, name: str, mode: str) -> Control:
    """Switch the running topology's health manager to ``mode`` (read by it at its next round)."""
    running(state, name)
    return HealthStore(state, name).set_mode(mode)


def request_apply(state: StateManager, name: str, decision_id: Optional[str] = None) -> Decision:
    """Ask the health manager to apply the pending recommendation (or the one ``decision_id`` names) at
    its next round; the decision asked for. Only in recommend mode: in auto it applies its decisions
    itself, off it does nothing."""
    mode = HealthStore(state, name).control().effective_mode(configured_mode(state, name))
    if mode != "recommend":
        raise SquallError(f"topology {name!r}: the health manager is in {mode} mode; --apply is for recommend "
                          "mode (switch with --mode recommend)")
    report: Report = HealthStore(state, name).report()
    if decision_id is None:
        chosen = report.pending()
        if chosen is None:
            raise SquallError(f"topology {name!r}: the health manager has no pending recommendation")
    else:
        chosen = next((d for d in report.history if d.id == decision_id), None)
        if chosen is None or chosen.status != "recommended" or chosen.action.kind == "none":
            raise SquallError(f"topology {name!r}: no pending recommendation {decision_id!r}")
    HealthStore(state, name).request_apply(chosen.id)
    return chosen
