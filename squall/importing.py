"""Naming user classes so that another process can import them."""
from __future__ import annotations

import importlib
from typing import Any


def qualified_name(cls: Any, what: str) -> str:
    """``module:QualName`` of a class, refusing what another process cannot import.

    ``what`` names the thing in the error (``components.split.class``).
    """
    if not isinstance(cls, type):
        raise ValueError(f"{what}: expected a class, got {cls!r}")
    module, qualname = cls.__module__, cls.__qualname__
    if "<locals>" in qualname or "<lambda>" in qualname:
        raise ValueError(
            f"{what}: {qualname} is defined inside a function; define it at module level "
            "so that every Squall process can import it"
        )
    if module == "__main__":
        raise ValueError(
            f"{what}: {qualname} is defined in __main__; put it in a module or topology file "
            "so that every Squall process can import it"
        )
    name = f"{module}:{qualname}"
    try:
        found = import_object(name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"{what}: {name} cannot be imported by name ({e})") from e
    if found is not cls:
        raise ValueError(f"{what}: importing {name} gives a different object than {cls!r}")
    return name


def import_object(name: str) -> Any:
    """Import ``module:Qual.Name`` (or ``module.Name``) and return the object."""
    if ":" in name:
        module, _, qualname = name.partition(":")
    else:
        module, _, qualname = name.rpartition(".")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj
