"""How many type annotations in Squall's own code name ``Any`` (issue 29 asks for half of them gone).

Counts every occurrence of ``Any`` inside a parameter annotation, a return
annotation or an annotated assignment (``typing.Any`` and string annotations
included), per layer and for the files with the most.

    .venv/bin/python bench/any_count.py [--top 25] [--against REF]

``--against REF`` also counts the tree of a git revision (``bench/revision.py``) and
prints the ratio, the figure bench/RESULTS.md records.
"""
from __future__ import annotations

import argparse
import ast
import collections
import os
import sys
from typing import Iterable, Iterator, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYERS = ("squall", "conf", "packing", "connectors", "state", "scheduler", "runtime", "yarn", "health", "ui",
          "testing", "reports")


def annotation_anys(annotation: ast.expr) -> int:
    count = 0
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id == "Any":
            count += 1
        elif isinstance(node, ast.Attribute) and node.attr == "Any":
            count += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            count += node.value.replace("[", " ").replace("]", " ").replace(",", " ").split().count("Any")
    return count


def count_source(source: str, name: str = "<source>") -> int:
    count = 0
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
                if arg is not None and arg.annotation is not None:
                    count += annotation_anys(arg.annotation)
            if node.returns is not None:
                count += annotation_anys(node.returns)
        elif isinstance(node, ast.AnnAssign):
            count += annotation_anys(node.annotation)
    return count


def python_files(root: str, layers: Iterable[str]) -> Iterator[Tuple[str, str]]:
    for layer in layers:
        for folder, dirs, files in os.walk(os.path.join(root, layer)):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    with open(path) as f:
                        yield os.path.relpath(path, root), f.read()


def tally(files: Iterable[Tuple[str, str]]) -> collections.Counter:
    return collections.Counter({path: count_source(text, path) for path, text in files})


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--against", metavar="REF")
    args = parser.parse_args(argv)
    now = tally(python_files(ROOT, LAYERS))
    total = sum(now.values())
    print(f"Any in annotations: {total}")
    for layer in LAYERS:
        print(f"  {layer:<11} {sum(v for k, v in now.items() if k.startswith(layer + '/')):>5}")
    print("files with the most:")
    for path, count in now.most_common(args.top):
        print(f"  {count:>4}  {path}")
    if args.against:
        import revision  # bench/revision.py: the revision's tree, laid out as the installed package

        before = sum(tally(python_files(revision.revision_path(args.against), ["squall"])).values())
        print(f"{args.against}: {before}; now / then = {total / before:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
