"""Another revision's code, importable as ``squall``: what a benchmark's ``--against REF`` runs beside today's.

``revision_path(ref)`` extracts the tree of a git revision (``git archive``) and
lays it out as ``setup.py`` installs it (``squall/`` with every layer's
directory under it: ``packing/`` as ``squall/packing``...), with its C extension
built where it has one (``runtime/instance/_emit.c``: the revision runs as it
ran, its compiled paths included) and its modules compiled to bytecode, once per commit, in the temporary
directory. Put the path first on ``PYTHONPATH`` of a subprocess and
its ``import squall`` is that revision's: the editable install's finder comes
after the path entries.
"""
from __future__ import annotations

import glob
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYERS = ("conf", "packing", "state", "scheduler", "runtime", "yarn", "health", "reports", "ui", "connectors", "testing")
EXTENSIONS = {"squall.runtime.instance._emit": "squall/runtime/instance/_emit.c"}  # module -> source, as setup.py


def commit_of(ref: str) -> str:
    done = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", f"{ref}^{{commit}}"], capture_output=True,
                          text=True)
    if done.returncode:
        sys.exit(f"--against {ref}: not a revision of {ROOT} ({done.stderr.strip()})")
    return done.stdout.strip()


def revision_path(ref: str) -> str:
    """A directory whose ``squall`` package is revision ``ref``'s code (made once per commit)."""
    commit = commit_of(ref)
    path = os.path.join(tempfile.gettempdir(), f"squall-rev-{commit[:12]}")
    if os.path.isdir(os.path.join(path, "squall")):
        build_extensions(path)  # a tree laid out before extensions were built here
        compile_bytecode(path)  # or before its bytecode was
        return path
    work = tempfile.mkdtemp(prefix=f"squall-rev-{commit[:12]}-")
    layers = [layer for layer in LAYERS  # an older revision may not have every layer yet
              if subprocess.run(["git", "-C", ROOT, "cat-file", "-e", f"{commit}:{layer}"],
                                capture_output=True).returncode == 0]
    archive = subprocess.run(["git", "-C", ROOT, "archive", commit, "squall", *layers],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(os.path.join(work, "tree"))
    shutil.move(os.path.join(work, "tree", "squall"), os.path.join(work, "squall"))
    for layer in layers:
        shutil.move(os.path.join(work, "tree", layer), os.path.join(work, "squall", layer))
    os.rmdir(os.path.join(work, "tree"))
    build_extensions(work)
    compile_bytecode(work)
    try:
        os.rename(work, path)
    except OSError:  # made meanwhile by another run
        shutil.rmtree(work, ignore_errors=True)
    return path


def compile_bytecode(path: str) -> None:
    """The revision's modules compiled, as ``make bytecode`` compiles this tree's: otherwise, under
    PYTHONDONTWRITEBYTECODE, each of its processes compiles them again (~0.2 s a process, ~1.5 s of a
    submit), and a comparison measures that instead of the code."""
    import compileall

    compileall.compile_dir(os.path.join(path, "squall"), quiet=1, workers=0)


def build_extensions(path: str) -> None:
    """The revision's C extensions built into its tree at ``path`` (as ``pip install`` builds them)."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    modules = [Extension(name, [os.path.join(path, source)]) for name, source in EXTENSIONS.items()
               if os.path.exists(os.path.join(path, source))
               and not glob.glob(os.path.join(path, os.path.splitext(source)[0] + ".*.so"))]
    if not modules:
        return
    command = build_ext(Distribution({"ext_modules": modules}))
    command.build_lib = path
    command.build_temp = os.path.join(path, "build")
    command.ensure_finalized()
    command.run()
    shutil.rmtree(command.build_temp, ignore_errors=True)


def env_for(ref: str) -> dict:
    """The environment of a subprocess that imports revision ``ref``'s ``squall``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([revision_path(ref), *filter(None, [env.get("PYTHONPATH")])])
    return env


def imported_from() -> str:
    """The directory ``squall`` is imported from in this process (to say which code a figure is of)."""
    import squall

    return os.path.dirname(os.path.dirname(os.path.abspath(squall.__file__)))
