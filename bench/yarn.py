"""YARN figures: Skein spec build time for large plans, and the shipped environment's size.

Spec build (``squall.yarn.spec.build_spec`` + ``to_yaml``, pure, no cluster)
for plans of 1k and 10k instances (FFD, task granularity), against packing
the same plan in the same run (the ratio is the figure to compare). With
``--package-env`` it also builds ``squall yarn package-env`` (needs the
package index) and prints the archive's size, unpacked size and the ratio to
this virtualenv's size.

    .venv/bin/python bench/yarn.py [--sizes 1000,10000] [--package-env]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from packing import best, topology  # noqa: E402

from squall.conf import base_config  # noqa: E402
from squall.packing import pack  # noqa: E402
from squall.yarn.environment import PythonEnvironment, package_env  # noqa: E402
from squall.yarn.spec import build_spec  # noqa: E402
from squall.yarn.staging import Staged  # noqa: E402


def du(path: str) -> int:
    total = 0
    for folder, _, files in os.walk(path):
        for f in files:
            p = os.path.join(folder, f)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--package-env", action="store_true")
    args = p.parse_args()
    config = dict(base_config())
    config["squall.yarn.max.allocation.mb"] = 65536
    config["squall.yarn.max.allocation.vcores"] = 64
    staged = Staged("/runs/t/state.json", "/runs/t/yarn/topology.tar.gz")
    env = PythonEnvironment("/opt/squall/bin/python")
    print("instances  containers  services  pack s  spec+yaml s  spec/pack")
    for n in (int(s) for s in args.sizes.split(",")):
        t = topology(n)
        plan = pack(t, algorithm="ffd", granularity="task")
        pack_s = best(lambda: pack(t, algorithm="ffd", granularity="task"), args.repeat)
        spec_s = best(lambda: build_spec("bench", plan, config, staged, env).to_yaml(), args.repeat)
        services = len(build_spec("bench", plan, config, staged, env).services)
        print(f"{n:9d}  {len(plan.containers):10d}  {services:8d}  {pack_s:6.3f}  {spec_s:11.4f}  "
              f"{spec_s / pack_s:9.3f}")
    if args.package_env:
        with tempfile.TemporaryDirectory() as tmp:
            archive = os.path.join(tmp, "env.tar.gz")
            start = time.perf_counter()
            size = package_env(archive)
            took = time.perf_counter() - start
            unpacked = os.path.join(tmp, "env")
            with tarfile.open(archive) as tar:
                tar.extractall(unpacked)
            check = subprocess.run([os.path.join(unpacked, "bin", "python"), "-c",
                                    "import squall.runtime.executor, squall.yarn.driver"], env={"PATH": "/usr/bin:/bin"},
                                   cwd=tmp)
            venv = du(sys.prefix)
            print(f"package-env: {size / 1e6:.1f} MB packed, {du(unpacked) / 1e6:.1f} MB unpacked, built in "
                  f"{took:.0f} s; this venv {venv / 1e6:.0f} MB; unpacked/venv {du(unpacked) / venv:.3f}; "
                  f"runtime imports {'ok' if check.returncode == 0 else 'FAILED'}")


if __name__ == "__main__":
    main()
