"""Every import, at module level or inside a function, follows the arrows of DESIGN.md's layer table."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# DESIGN.md, "Code layout": what each layer may import besides itself (``testing/`` may import anything).
ALLOWED = {
    "squall": {"conf"},
    "conf": set(),
    "packing": {"squall", "conf"},
    "connectors": {"squall", "state", "conf"},
    "state": {"squall", "conf"},
    "scheduler": {"packing", "state", "squall", "conf", "runtime.client"},
    "runtime": {"squall", "state", "conf"},
    "yarn": {"scheduler", "packing", "state", "squall", "conf"},
    "health": {"scheduler", "packing", "state", "squall", "conf", "runtime.client"},
    "ui": {"scheduler", "health", "state", "packing", "squall", "conf", "runtime.client"},
    "reports": {"packing", "squall", "conf"},
}
LAYERS = set(ALLOWED) | {"testing"}
COMPOSITION_ROOT = os.path.join("squall", "cli.py")  # loads each layer's ``cli`` module


def layer_of(module: str):
    """The layer an imported ``squall.*`` module belongs to (``runtime.client`` on its own), or None."""
    parts = module.split(".")
    if parts[0] != "squall":
        return None
    if len(parts) == 1 or parts[1] not in LAYERS:
        return "squall"
    if parts[1:3] == ["runtime", "client"]:
        return "runtime.client"
    return parts[1]


def violations(root: str) -> list:
    """``(file, line, module)`` of every import a layer's table row does not allow."""
    found = []
    for layer, allowed in ALLOWED.items():
        for folder, dirs, files in os.walk(os.path.join(root, layer)):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
            for name in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(folder, name)
                with open(path) as f:
                    tree = ast.parse(f.read(), path)
                for node in ast.walk(tree):
                    if isinstance(node, ast.Import):
                        modules = [a.name for a in node.names]
                    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                        modules = [node.module]
                    else:
                        continue
                    for module in modules:
                        target = layer_of(module)
                        if target is None or target in allowed or target == layer:
                            continue
                        if target == "runtime.client" and layer == "runtime":
                            continue
                        if os.path.relpath(path, root) == COMPOSITION_ROOT and module.endswith(".cli"):
                            continue
                        found.append((os.path.relpath(path, root), node.lineno, module))
    return found


def test_no_import_goes_against_the_layer_table():
    assert violations(ROOT) == []


def test_a_planted_bad_import_is_found_even_inside_a_function(tmp_path):
    for layer in ALLOWED:
        (tmp_path / layer).mkdir()
    (tmp_path / "packing" / "fine.py").write_text("from squall.conf import Config\nimport squall.packing.x\n")
    (tmp_path / "ui" / "bad.py").write_text("def f():\n    from squall.runtime.checkpoints import x\n")
    (tmp_path / "state" / "bad.py").write_text("import squall.scheduler.launcher\n")
    assert sorted(violations(str(tmp_path))) == [
        (os.path.join("state", "bad.py"), 1, "squall.scheduler.launcher"),
        (os.path.join("ui", "bad.py"), 2, "squall.runtime.checkpoints")]
