"""What a run needs outside the topology, checked before anything is launched."""
from __future__ import annotations

from typing import Optional

from squall.conf import Config
from squall.errors import TopologyError
from squall.idl import schema
from squall.importing import import_object
from squall.logical import component_config


def check_components(topology: schema.Topology, base: Optional[Config] = None) -> None:
    """Each component's ``check_config`` against the configuration its tasks will really get (every layer,
    ``--config-property`` too). No I/O. A ``TopologyError`` names the component."""
    _each(topology, base, outside=False)


def preflight(topology: schema.Topology, base: Optional[Config] = None) -> None:
    """``check_components``, then each component's ``preflight``: a broker that does not answer, a topic
    that does not exist, a path that cannot be written. A ``TopologyError`` names the component."""
    _each(topology, base, outside=True)


def _each(topology: schema.Topology, base: Optional[Config], outside: bool) -> None:
    for c in topology.components:
        cls = import_object(c.class_name)
        config = component_config(topology, c.name, base)
        try:
            cls.check_config(config)
            if outside:
                cls.preflight(config)
        except (ValueError, OSError) as e:
            raise TopologyError(f"components.{c.name}: {e}") from e
