"""What the health manager decides with: every ``squall.health.*`` key but the loop's mode and interval,
read once from the topology's config (per component where a component's own config may differ)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from squall import logical
from squall.conf import Config
from squall.idl import schema

SCALED_KINDS = (schema.ComponentKind.SPOUT, schema.ComponentKind.BOLT)


@dataclass(frozen=True)
class HealthSettings:
    target_utilization: float = 0.7
    band: float = 0.2
    min_parallelism: Mapping[str, int] = field(default_factory=dict)  # component -> bound (1 when absent)
    max_parallelism: Mapping[str, int] = field(default_factory=dict)  # component -> bound (64 when absent)
    max_containers: Optional[int] = None
    catch_up_secs: float = 120.0
    scale_down_grace_secs: float = 60.0
    stabilization_secs: float = 45.0
    latency_target_ms: Optional[float] = None
    pending_memory_mb: float = 256.0
    blacklist_secs: float = 600.0
    resize_margin: float = 0.3

    @classmethod
    def from_config(cls, config: Mapping[str, object], topology: schema.Topology) -> "HealthSettings":
        """``config``: the topology's resolved config; the bounds per component come from each
        component's own config over it."""
        base = config if isinstance(config, Config) else Config(config)
        per_component = {c.name: logical.component_config(topology, c.name, base)
                         for c in topology.components if c.kind in SCALED_KINDS}
        return cls(
            target_utilization=float(base["squall.health.target.utilization"]),
            band=float(base["squall.health.utilization.band"]),
            min_parallelism={n: int(c["squall.health.min.parallelism"]) for n, c in per_component.items()},
            max_parallelism={n: int(c["squall.health.max.parallelism"]) for n, c in per_component.items()},
            max_containers=base["squall.health.max.containers"],
            catch_up_secs=float(base["squall.health.catch.up.secs"]),
            scale_down_grace_secs=float(base["squall.health.scale.down.grace.secs"]),
            stabilization_secs=float(base["squall.health.stabilization.secs"]),
            latency_target_ms=base["squall.health.latency.target.ms"],
            pending_memory_mb=float(base["squall.health.pending.memory.mb"]),
            blacklist_secs=float(base["squall.health.blacklist.secs"]),
            resize_margin=float(base["squall.health.resize.margin"]),
        )

    @property
    def high(self) -> float:
        """Busy fraction at or above which a component is saturated."""
        return self.target_utilization + self.band

    @property
    def low(self) -> float:
        """Busy fraction below which a component is over-provisioned."""
        return max(0.0, self.target_utilization - self.band)

    @property
    def headroom(self) -> float:
        """Spare throughput a component is sized with: sized for ``target_utilization`` busy."""
        return 1.0 / self.target_utilization - 1.0

    def bounds(self, component: str) -> tuple[int, int]:
        """``(min, max)`` parallelism of ``component``."""
        return self.min_parallelism.get(component, 1), self.max_parallelism.get(component, 64)
