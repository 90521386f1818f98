"""The metrics row's columns and reserved keys are named in one module, ``squall.metrics_schema``."""
import ast
import os

from squall import metrics_schema
from squall.metrics_schema import FIELD_NAMES, RESERVED_KEYS, carries

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAYERS = ("squall", "conf", "packing", "connectors", "state", "scheduler", "runtime", "yarn", "health", "ui",
          "testing", "reports")
DAEMON_COMPONENTS = {metrics_schema.STMGR_COMPONENT, metrics_schema.METRICSMGR_COMPONENT,
                     metrics_schema.TMASTER_COMPONENT, metrics_schema.HEALTH_COMPONENT}


def bare_spellings(root: str) -> list:
    """``(file, line, text)`` of every string literal outside squall/metrics_schema.py that spells a reserved
    key or a daemon's component name (or holds one quoted, as a test on a row's JSON text would)."""
    names = RESERVED_KEYS | DAEMON_COMPONENTS
    found = []
    for layer in LAYERS:
        for folder, dirs, files in os.walk(os.path.join(root, layer)):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
            for name in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(folder, name)
                if os.path.relpath(path, root) == os.path.join("squall", "metrics_schema.py"):
                    continue
                with open(path) as f:
                    tree = ast.parse(f.read(), path)
                for node in ast.walk(tree):
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                            node.value in names or any(f'"{n}"' in node.value for n in names)):
                        found.append((os.path.relpath(path, root), node.lineno, node.value))
    return found


def test_no_reserved_key_is_spelled_outside_the_schema():
    assert bare_spellings(ROOT) == []


def test_a_planted_bare_key_is_found(tmp_path):
    (tmp_path / "runtime").mkdir()
    (tmp_path / "runtime" / "bad.py").write_text('x = {"__pending": 1}\nif \'"__errors"\' in text: pass\n')
    assert bare_spellings(str(tmp_path)) == [(os.path.join("runtime", "bad.py"), 1, "__pending"),
                                             (os.path.join("runtime", "bad.py"), 2, '"__errors"')]


def test_reserved_keys_never_meet_a_user_metric():
    assert all(key.startswith("__") for key in RESERVED_KEYS | DAEMON_COMPONENTS)


def test_the_row_ends_with_user_and_starts_with_its_time():
    assert FIELD_NAMES[0] == "ts" and FIELD_NAMES[-1] == "user" and len(set(FIELD_NAMES)) == len(FIELD_NAMES)


def test_carries_looks_for_the_quoted_key():
    assert carries('{"__errors": []}', metrics_schema.ERRORS)
    assert not carries('{"__error-count": 1}', metrics_schema.ERRORS)
