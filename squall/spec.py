"""Component specs: what ``add_spout``/``add_bolt`` and ``X.spec()`` return."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from squall.stream import DEFAULT_STREAM


@dataclass(frozen=True)
class StreamRef:
    """A (component, stream) pair used as a key of a bolt's ``inputs``."""

    component: str
    stream: str = DEFAULT_STREAM


@dataclass(eq=False)
class ComponentSpec:
    """A component as declared: checked and turned into the logical plan by ``build()``.

    ``name`` is None for a class-DSL spec until its attribute name is known.
    """

    name: Optional[str]
    kind: str  # "SPOUT" or "BOLT"
    cls: object
    par: object = 1
    inputs: object = None
    config: Optional[Mapping[str, object]] = None

    def __getitem__(self, stream: str) -> "_PendingRef":
        """``spec["stream"]`` names one of this component's streams in ``inputs``."""
        return _PendingRef(self, stream)

    def ref_name(self) -> str:
        if self.name is None:
            raise ValueError("a component spec is used before it has a name")
        return self.name


@dataclass(frozen=True, eq=False)
class _PendingRef:
    """``spec["stream"]`` of a spec whose name may not be bound yet."""

    spec: ComponentSpec
    stream: str
