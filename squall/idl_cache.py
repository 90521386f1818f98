"""thriftpy2's parse of ``squall.thrift``, kept as data so that a process need not parse it again.

Every runtime process imports the schema, and thriftpy2 builds its parser tables and parses the
IDL on each import: about a third of a process's start. ``describe`` turns the parsed module
into JSON (each class's attributes as thriftpy2 set them, classes named), ``restore`` builds the
same module from it with thriftpy2's own ``gen_init``. ``squall/idl.py`` uses the file only when
it was made from this very IDL by this very thriftpy2 version; otherwise it parses. Regenerate
it with ``make idl`` (tests/foundation/test_idl_cache.py says when it is stale).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import types
from collections import defaultdict
from typing import Any, Optional

from thriftpy2.thrift import TPayload, gen_init

IDL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "squall.thrift")
CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "squall_thrift.json")
_MADE = ("__init__", "__dict__", "__weakref__", "__module__", "__thrift_file__")  # remade, not kept


def digest(path: str = IDL) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _encode(value: Any) -> Any:
    if isinstance(value, type):
        return {"class": value.__name__}
    if isinstance(value, tuple):
        return {"tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {"dict": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot keep a {type(value).__name__} of the parsed IDL: {value!r}")


def _decode(value: Any, classes: dict) -> Any:
    if isinstance(value, list):
        return [_decode(v, classes) for v in value]
    if isinstance(value, dict):
        if "class" in value:
            return classes[value["class"]]
        if "tuple" in value:
            return tuple(_decode(v, classes) for v in value["tuple"])
        return {_decode(k, classes): _decode(v, classes) for k, v in value["dict"]}
    return value


def describe(module: types.ModuleType, idl_digest: str, thriftpy2_version: str) -> dict:
    """The parsed module as JSON-able data, with what it was made from."""
    meta = module.__thrift_meta__
    classes = []
    for kind in ("enums", "structs"):
        for cls in meta[kind]:
            attrs = {k: _encode(v) for k, v in vars(cls).items() if k not in _MADE}
            classes.append({"name": cls.__name__, "kind": kind, "attrs": attrs})
    return {"idl_sha256": idl_digest, "thriftpy2": thriftpy2_version,
            "namespaces": module.__thrift_namespaces__, "classes": classes}


def restore(description: dict, module_name: str, thrift_file: str) -> types.ModuleType:
    """The module ``thriftpy2.load(thrift_file, module_name)`` makes, from ``describe``'s data."""
    module = types.ModuleType(module_name)
    module.__thrift_file__ = thrift_file
    module.__thrift_namespaces__ = dict(description["namespaces"])
    meta: defaultdict = defaultdict(list)
    meta["includes"] = []
    classes = {}
    for item in description["classes"]:  # every class first: a struct's spec names others
        base = TPayload if item["kind"] == "structs" else object
        cls = type(item["name"], (base,), {"__module__": module_name, "__thrift_file__": thrift_file})
        classes[item["name"]] = cls
        meta[item["kind"]].append(cls)
        setattr(module, item["name"], cls)
    for item in description["classes"]:
        cls = classes[item["name"]]
        for key, value in item["attrs"].items():
            setattr(cls, key, _decode(value, classes))
        if item["kind"] == "structs":
            gen_init(cls, cls.thrift_spec, cls.default_spec)
    module.__thrift_meta__ = meta
    sys.modules[module_name] = module
    return module


def read(path: str, idl_digest: str, thriftpy2_version: str) -> Optional[dict]:
    """The description in ``path`` if it was made from this IDL by this thriftpy2, else None."""
    try:
        with open(path) as f:
            description = json.load(f)
    except (OSError, ValueError):
        return None
    if description.get("idl_sha256") != idl_digest or description.get("thriftpy2") != thriftpy2_version:
        return None
    return description


def write(path: str = CACHE) -> None:
    """Parse the IDL with thriftpy2 and keep the result in ``path``."""
    import thriftpy2
    from thriftpy2.parser.parser import parse

    module = parse(IDL, module_name="squall_thrift", enable_cache=False)
    description = describe(module, digest(), thriftpy2.__version__)
    classes = description.pop("classes")
    head = json.dumps(description, sort_keys=True)[:-1]
    with open(path, "w") as f:  # a class a line: a change to the IDL reads as a diff of its classes
        f.write(f'{head}, "classes": [\n' + ",\n".join(json.dumps(c, sort_keys=True) for c in classes) + "\n]}\n")
