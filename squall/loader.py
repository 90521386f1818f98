"""Loading a topology file: a Python module exposing exactly one topology."""
from __future__ import annotations

import copy
import importlib.util
import os
import sys
from typing import Any

from squall.errors import SquallError, TopologyError
from squall.idl import replace
from squall.streamlet import Builder
from squall.topology import Topology


def load_topology_file(path: str) -> Topology:
    """Import ``path`` and return its one topology, with ``source_file`` recorded.

    The file's directory goes on ``sys.path`` and the module is imported under
    its file name, exactly as every runtime process will import it again.
    """
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise SquallError(f"topology file {path} does not exist")
    if not path.endswith(".py"):
        raise SquallError(f"topology file {path} is not a Python file (.py)")
    module = import_topology_module(path)
    # A copy: the module (and its topology) stays cached in sys.modules, and
    # callers change the plan (overrides, --name) for this load only.
    topology = copy.copy(_the_topology(module, path))
    topology.warnings = list(topology.warnings)
    topology.plan = replace(topology.plan, source_file=path)
    return topology


def import_topology_module(path: str) -> Any:
    """Import a topology file as the module named after it (``word_count.py`` -> ``word_count``)."""
    name = os.path.splitext(os.path.basename(path))[0]
    if not name.isidentifier():
        raise SquallError(f"topology file {path}: {name!r} is not a valid module name")
    existing = sys.modules.get(name)
    if existing is not None:
        if os.path.abspath(getattr(existing, "__file__", "") or "") == path:
            return existing
        raise SquallError(
            f"topology file {path}: its name {name!r} shadows the module {existing.__name__} "
            f"({getattr(existing, '__file__', 'built in')}); rename the file"
        )
    directory = os.path.dirname(path)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (TopologyError, SquallError) as e:
        del sys.modules[name]
        raise type(e)(f"{path}: {e}") from e
    except SyntaxError as e:
        del sys.modules[name]
        raise SquallError(f"topology file {path}, line {e.lineno}: syntax error: {e.msg}") from e
    except SystemExit as e:
        del sys.modules[name]
        raise SquallError(f"topology file {path} called sys.exit({e.code!r}) while it was imported; "
                          "a topology file must only build its topology") from None
    except KeyboardInterrupt:
        del sys.modules[name]
        raise SquallError(f"topology file {path} was interrupted while it was imported") from None
    except Exception as e:
        del sys.modules[name]
        raise SquallError(f"topology file {path} failed to import: {type(e).__name__}: {e}") from e
    return module


def _the_topology(module: Any, path: str) -> Topology:
    instances = {name: v for name, v in vars(module).items() if isinstance(v, Topology)}
    classes = {
        name: v
        for name, v in vars(module).items()
        if isinstance(v, type) and issubclass(v, Topology) and v is not Topology
        and v.__module__ == module.__name__
        and not any(type(i) is v for i in instances.values())
    }
    found = [f"{n} (instance)" for n in instances] + [f"{n} (class)" for n in classes]
    if not found:
        return _the_streamlets(module, path)
    if len(found) > 1:
        raise SquallError(f"topology file {path} exposes {len(found)} topologies: {', '.join(found)}; keep one")
    if instances:
        return next(iter(instances.values()))
    cls = next(iter(classes.values()))
    try:
        return cls()
    except TopologyError as e:
        raise TopologyError(f"{path}: {e}") from e


def _the_streamlets(module: Any, path: str) -> Topology:
    """A file with no topology may expose one streamlet builder instead: its compiled topology."""
    builders = [name for name, v in vars(module).items() if isinstance(v, Builder)]
    if not builders:
        raise SquallError(
            f"topology file {path} exposes no topology: define `topology = builder.build()`, "
            "one subclass of squall.Topology, or one streamlet builder (squall.Builder)"
        )
    if len(builders) > 1:
        raise SquallError(f"topology file {path} exposes {len(builders)} streamlet builders: "
                          f"{', '.join(builders)}; keep one")
    try:
        return getattr(module, builders[0]).build()
    except TopologyError as e:
        raise TopologyError(f"{path}: {e}") from e
