"""The modules of ``squall/`` form no import cycle: each imports alone, in a fresh interpreter, in any order.

A cycle kept alive by import order (``squall/__init__.py`` importing one module
of it first) or hidden behind an import inside a function breaks as soon as
someone imports another member first; here the package's ``__init__`` is
skipped so that each module really comes first.
"""
import ast
import itertools
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SQUALL = os.path.join(ROOT, "squall")
# squall/cli.py, the composition root, reads the package's own __version__: it is imported with the package
MODULES = sorted(n[:-3] for n in os.listdir(SQUALL) if n.endswith(".py") and n not in ("__init__.py", "cli.py"))
# the modules that once formed the cycle logical <-> topology <-> stateful / windowed_bolt
ONCE_CYCLIC = ("logical", "topology", "stateful", "windowed_bolt", "chaining")

# Imports ``squall.<name>`` for each name of each order in a fresh set of modules, without running
# squall/__init__.py; prints the first failure. The modules in the first argument, which import no module
# of the orders, are kept between orders (the schema's and the config's: most of an order's import time).
IMPORT_ALONE = """
import importlib, importlib.util, sys
keep = [name for name in sys.argv[1].split(",") if name]
orders = [o.split(",") for o in sys.argv[2:]]
spec = importlib.util.find_spec("squall")
sys.modules["squall"] = importlib.util.module_from_spec(spec)  # the package, its __init__ not run
for name in keep:
    importlib.import_module("squall." + name)
kept = {k for k in sys.modules if k.startswith("squall.")}
if kept & {"squall." + name for order in orders for name in order}:
    print(f"kept modules {sorted(kept)} import a module of the orders: nothing would be imported afresh")
    sys.exit(1)
for order in orders:
    for key in [k for k in sys.modules if k.startswith("squall.") and k not in kept]:
        del sys.modules[key]
    # a fresh package too: ``from squall import x`` would take a module of an earlier order from its attributes
    sys.modules["squall"] = package = importlib.util.module_from_spec(spec)
    for key in kept:
        if key.count(".") == 1:
            setattr(package, key.split(".")[1], sys.modules[key])
    for name in order:
        try:
            importlib.import_module("squall." + name)
        except Exception as e:
            print(f"import order {order}: squall.{name}: {type(e).__name__}: {e}")
            sys.exit(1)
"""


def import_in_fresh_interpreter(orders: list, keep: tuple = ()) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", IMPORT_ALONE, ",".join(keep)] + [",".join(o) for o in orders],
                          capture_output=True, text=True, timeout=120)


def test_every_module_imports_alone():
    for name in MODULES:
        done = import_in_fresh_interpreter([[name]])
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_once_cyclic_modules_import_in_every_order():
    done = import_in_fresh_interpreter(list(itertools.permutations(ONCE_CYCLIC)), keep=("idl", "conf"))
    assert done.returncode == 0, done.stdout + done.stderr


def imports_between_modules(folder: str) -> dict:
    """module -> the modules of the same folder it imports, at module level or inside a function."""
    names = {n[:-3] for n in os.listdir(folder) if n.endswith(".py") and n != "__init__.py"}
    graph = {}
    for name in names:
        with open(os.path.join(folder, name + ".py")) as f:
            tree = ast.parse(f.read())
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                parts = node.module.split(".")
                if parts[0] == "squall" and len(parts) == 2 and parts[1] in names:
                    found.add(parts[1])
                elif node.module == "squall":
                    found.update(a.name for a in node.names if a.name in names)
            elif isinstance(node, ast.Import):
                found.update(a.name.split(".")[1] for a in node.names
                             if a.name.startswith("squall.") and a.name.split(".")[1] in names)
        graph[name] = found - {name}
    return graph


def a_cycle(graph: dict):
    """One cycle of the graph as a list of names (first == last), or None."""
    visiting, done = [], set()

    def visit(node):
        if node in visiting:
            return visiting[visiting.index(node):] + [node]
        if node in done:
            return None
        visiting.append(node)
        for nxt in sorted(graph.get(node, ())):
            cycle = visit(nxt)
            if cycle:
                return cycle
        visiting.pop()
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start)
        if cycle:
            return cycle
    return None


def test_no_import_cycle_even_through_imports_inside_functions():
    assert a_cycle(imports_between_modules(SQUALL)) is None


def test_a_planted_cycle_is_found(tmp_path):
    (tmp_path / "a.py").write_text("from squall.b import x\n")
    (tmp_path / "b.py").write_text("def f():\n    from squall import a\n")
    (tmp_path / "c.py").write_text("import squall.a\n")
    assert a_cycle(imports_between_modules(str(tmp_path))) == ["a", "b", "a"]


def test_logical_importing_topology_again_would_be_found():
    """The cycle this test was written for: logical.py importing topology.py, which imports logical.py."""
    graph = imports_between_modules(SQUALL)
    graph["logical"] = graph["logical"] | {"topology"}
    assert a_cycle(graph) == ["logical", "topology", "logical"]
