"""What a run needs outside the topology, checked before anything is launched."""
from __future__ import annotations

from typing import Any, Optional

from squall.conf import Config
from squall.errors import TopologyError
from squall.importing import import_object
from squall.logical import component_config


def preflight(topology: Any, base: Optional[Config] = None) -> None:
    """Each component's ``check_config`` against the configuration its tasks will really get (with the
    cluster layer and ``--config-property``), then its ``preflight``: a broker that does not answer, a
    topic that does not exist, a path that cannot be written. A ``TopologyError`` names the component."""
    for c in topology.components:
        cls = import_object(c.class_name)
        config = component_config(topology, c.name, base)
        try:
            cls.check_config(config)
            cls.preflight(config)
        except (ValueError, OSError) as e:
            raise TopologyError(f"components.{c.name}: {e}") from e
