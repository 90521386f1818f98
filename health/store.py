"""The health manager's records in the state manager, so that they survive its restart and a topology
master failover.

Two JSON records per topology, each with one writer, so that no write loses another's:

- ``health/<topology>/control`` — what operators ask (``squall health --mode/--apply``, the UI, REST):
  the mode (None: ``squall.health.mode`` of the topology's config) and the id of a recommendation to
  apply once;
- ``health/<topology>/manager`` — what the manager did: the mode in effect, the last observation's
  symptoms and every decision with its evidence (``health/model.py``'s ``Decision``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Mapping, Optional

from squall.errors import SquallError
from squall.health.model import MODES, Decision
from squall.state import Kind, StateManager, member

CONTROL = "control"
MANAGER = "manager"


@dataclass(frozen=True)
class Control:
    """What operators asked of the health manager."""

    mode: Optional[str] = None  # None: the topology's squall.health.mode
    apply: Optional[str] = None  # id of a recommended decision to apply once (recommend mode)

    def effective_mode(self, configured: str) -> str:
        return self.mode or configured


@dataclass(frozen=True)
class Report:
    """What the health manager last wrote: the mode in effect, the symptoms it saw and its decisions."""

    time: float = 0.0
    mode: str = ""
    symptoms: Mapping[str, object] = field(default_factory=dict)  # component -> figures now
    history: tuple[Decision, ...] = ()
    # (time, component -> parallelism) each time the observed parallelism changed (the UI's chart)
    parallelism: tuple[tuple[float, Mapping[str, int]], ...] = ()

    def to_json(self) -> dict:
        return {"time": self.time, "mode": self.mode, "symptoms": dict(self.symptoms),
                "history": [d.to_json() for d in self.history],
                "parallelism": [[t, dict(p)] for t, p in self.parallelism]}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> "Report":
        history = tuple(Decision.from_json(d) for d in data.get("history", []))  # type: ignore[union-attr]
        parallelism = tuple((float(t), dict(p)) for t, p in data.get("parallelism", []))  # type: ignore[union-attr]
        return cls(float(data.get("time", 0.0)), str(data.get("mode", "")),  # type: ignore[arg-type]
                   dict(data.get("symptoms", {})), history, parallelism)  # type: ignore[arg-type]

    def pending(self) -> Optional[Decision]:
        """The newest recommendation not yet applied, if it changes something."""
        return next((d for d in reversed(self.history)
                     if d.status == "recommended" and d.action.kind != "none"), None)


class HealthStore:
    """Reads and writes one topology's health records."""

    def __init__(self, state: StateManager, topology: str):
        self.state, self.topology = state, topology

    def _read(self, which: str) -> Optional[dict]:
        raw = self.state.get(Kind.HEALTH, member(self.topology, which))
        if raw is None:
            return None
        path = f"{Kind.HEALTH.value}/{self.topology}/{which}"
        try:
            data = json.loads(raw)
        except ValueError as e:
            raise SquallError(f"health record {path} is corrupt: {e}") from e
        if not isinstance(data, dict):
            raise SquallError(f"health record {path} is corrupt: expected a JSON object")
        return data

    def _write(self, which: str, data: dict) -> None:
        self.state.put(Kind.HEALTH, member(self.topology, which), json.dumps(data, default=str).encode())

    def control(self) -> Control:
        data = self._read(CONTROL) or {}
        return Control(data.get("mode"), data.get("apply"))

    def set_mode(self, mode: str) -> Control:
        if mode not in MODES:
            raise SquallError(f"--mode {mode!r}: expected one of {', '.join(MODES)}")
        control = replace(self.control(), mode=mode)
        self._write(CONTROL, {"mode": control.mode, "apply": control.apply})
        return control

    def request_apply(self, decision_id: str) -> Control:
        control = replace(self.control(), apply=decision_id)
        self._write(CONTROL, {"mode": control.mode, "apply": control.apply})
        return control

    def report(self) -> Report:
        data = self._read(MANAGER)
        return Report() if data is None else Report.from_json(data)

    def save(self, report: Report) -> None:
        self._write(MANAGER, report.to_json())
