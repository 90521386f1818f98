"""The Python a YARN container runs Squall with.

Two ways, one of them configured:

- ``squall.yarn.python``: an interpreter with Squall installed, at the same
  path on every node (installed by the cluster's configuration management).
  Nothing is shipped; containers start fastest.
- ``squall.yarn.environment``: a venv-pack or conda-pack archive (``.tar.gz``)
  shipped as a Skein archive and unpacked by YARN into ``environment/`` in
  each container. venv-pack needs the same Python at the same path on every
  node; conda-pack carries its Python (``conda-unpack`` is run first).
  ``squall yarn package-env OUT.tar.gz`` builds one holding Squall with only
  its runtime dependencies and Skein (the application driver in the
  application master's container uses it), not PySpark or the report stack.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Mapping, Optional

from squall.yarn.errors import YarnError

ENVIRONMENT_KEY = "environment"  # the archive's folder in a container
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")


@dataclass(frozen=True)
class PythonEnvironment:
    python: str  # the interpreter as the container's script runs it
    archive: Optional[str] = None  # source of the shipped environment, if any

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> "PythonEnvironment":
        python, archive = config["squall.yarn.python"], config["squall.yarn.environment"]
        if python and archive:
            raise YarnError("squall.yarn.python and squall.yarn.environment are both set: choose the interpreter on "
                            "every node or the shipped archive")
        if python:
            if not os.path.isabs(python):
                raise YarnError(f"squall.yarn.python={python!r}: give the interpreter's absolute path on the nodes")
            return cls(python)
        if archive:
            if not archive.endswith(ARCHIVE_SUFFIXES):
                raise YarnError(f"squall.yarn.environment={archive!r}: expected a .tar.gz, .tgz or .zip archive "
                                "(squall yarn package-env OUT.tar.gz builds one)")
            if "://" not in archive:
                archive = os.path.abspath(os.path.expanduser(archive))
                if not os.path.isfile(archive):
                    raise YarnError(f"squall.yarn.environment={archive!r}: no such file")
            return cls(f"{ENVIRONMENT_KEY}/bin/python", archive)
        raise YarnError("--cluster yarn needs a Python for the containers: set squall.yarn.python (an interpreter "
                        "with Squall installed on every node) or squall.yarn.environment (an archive from "
                        "`squall yarn package-env OUT.tar.gz`) in the cluster config")

    def setup_lines(self) -> list:
        """Shell lines a container runs before the interpreter (conda-pack's prefix fix-up)."""
        if self.archive is None:
            return []
        unpack = f"{ENVIRONMENT_KEY}/bin/conda-unpack"
        return [f"if [ -x {unpack} ]; then {unpack}; fi"]


def source_root() -> Optional[str]:
    """The source checkout this Squall runs from (it has setup.py), or None for an installed wheel."""
    import squall

    root = os.path.dirname(os.path.dirname(os.path.abspath(squall.__file__)))
    return root if os.path.isfile(os.path.join(root, "setup.py")) else None


def package_env(out: str, python: str = sys.executable, requirement: Optional[str] = None) -> int:
    """Build ``out`` (.tar.gz): a venv-pack archive of a fresh virtualenv holding ``squall[yarn]``.

    The virtualenv is made with ``python`` (the nodes need the same Python at
    the same path); Squall is installed from this source checkout, or as
    ``requirement`` (default ``squall[yarn]==<this version>``) from the package
    index. Returns the archive's size in bytes.
    """
    try:
        import venv_pack
    except ImportError:
        raise YarnError("squall yarn package-env needs venv-pack: pip install 'squall[yarn]'") from None
    from squall import __version__

    if not out.endswith((".tar.gz", ".tgz")):
        raise YarnError(f"{out}: the archive must end in .tar.gz or .tgz (Skein unpacks it by its suffix)")
    root = source_root()
    if requirement is None:
        requirement = f"{root}[yarn]" if root else f"squall[yarn]=={__version__}"
    with tempfile.TemporaryDirectory(prefix="squall-env-") as tmp:
        env_dir = os.path.join(tmp, "env")
        _run([python, "-m", "venv", env_dir], "create the virtualenv")
        pip = [os.path.join(env_dir, "bin", "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        # a copy of the source, not an editable install: the archive must hold the code
        source = requirement
        if root and requirement.startswith(root):
            source = _copy_source(root, os.path.join(tmp, "src")) + requirement[len(root):]
        _run(pip + [source], f"install {requirement}")
        venv_pack.pack(prefix=env_dir, output=os.path.abspath(out), force=True, verbose=False)
    return os.path.getsize(out)


def _copy_source(root: str, dest: str) -> str:
    # a compiled module built in place for this machine is built again by the install
    ignore = shutil.ignore_patterns(".*", "__pycache__", "*.egg-info", "*.so", "build", "tests", "bench", "docs")
    shutil.copytree(root, dest, ignore=ignore)
    return dest


def _run(command: list, what: str) -> None:
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        tail = "\n".join(result.stdout.strip().splitlines()[-10:])
        raise YarnError(f"package-env: cannot {what} (exit {result.returncode}):\n{tail}")
