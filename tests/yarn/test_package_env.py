"""The YARN environment holds the compiled emit: ``squall yarn package-env`` installs Squall from a
copy of its source, and that install compiles ``runtime/instance/_emit.c``."""
import glob
import os
import subprocess
import sys
import zipfile

import pytest

from squall.runtime.instance.compiled import BUILT
from squall.yarn.environment import _copy_source, source_root


@pytest.mark.skipif(not BUILT, reason="the compiled emit was not built here either")
def test_the_environment_s_install_of_the_source_builds_the_compiled_emit(tmp_path):
    root = source_root()
    if root is None:
        pytest.skip("Squall runs from an installed wheel here, not from its source")
    src = _copy_source(root, str(tmp_path / "src"))
    assert not glob.glob(os.path.join(src, "**", "*.so"), recursive=True)  # this machine's build stays behind
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path / "out"), src], check=True, capture_output=True)
    (wheel,) = glob.glob(str(tmp_path / "out" / "*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert [n for n in names if n.startswith("squall/runtime/instance/_emit.") and n.endswith(".so")]
