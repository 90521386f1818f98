"""Squall: a Heron/Storm-style stream processing engine in Python.

Each top-level source directory is mapped into the one ``squall`` namespace
(``packing/`` becomes ``squall.packing`` and so on), so nothing generic lands at
the top of site-packages.
"""
import os

from setuptools import Extension, setup

LAYERS = ["conf", "packing", "state", "scheduler", "runtime", "yarn", "health", "reports", "ui", "connectors", "testing"]


def _packages() -> dict:
    """``squall.<layer>[.<sub>...]`` -> its directory, for every package folder of every layer."""
    out = {"squall": "squall"}
    for layer in LAYERS:
        for folder, dirs, files in os.walk(layer):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
            if "__init__.py" in files:
                out["squall." + folder.replace(os.sep, ".")] = folder
    return out


RUNTIME = ["thriftpy2>=0.4.16", "msgpack>=1.0", "PyYAML>=5.4", "psutil>=5.8", "kazoo>=2.9"]
YARN = ["skein>=0.8.2", "venv-pack>=0.2"]  # submitting to YARN; packing environments for it
REPORTS = ["pyspark>=3.4", "pandas>=1.5", "pyarrow>=10", "matplotlib>=3.5"]
SOLVER = ["ortools>=9.10"]  # CP-SAT: the optimum bench/packing.py compares packings with
UI = ["fastapi>=0.110", "uvicorn>=0.27", "jinja2>=3.1"]  # squall ui: the REST API (with OpenAPI) and pages
HDFS = ["pyarrow>=10"]  # checkpoint storage and the file connectors on HDFS (pyarrow's HadoopFileSystem)
KAFKA = ["confluent-kafka>=2.3"]  # the Kafka connectors (librdkafka; its mock cluster is the test broker)
PROFILE = ["py-spy>=0.3"]  # squall profile --flame from outside the process, where it may be traced
PACKAGES = _packages()
# The at-most-once fast emit in C (runtime/instance/_emit.c), built with the machine's compiler at
# install. Optional: where it cannot be built, the install goes on and the pure Python emit runs.
COMPILED = [Extension("squall.runtime.instance._emit", ["runtime/instance/_emit.c"], optional=True)]

setup(
    name="squall",
    version="0.1.0",
    description="Heron/Storm-style stream processing for shared Hadoop/Spark clusters",
    python_requires=">=3.9",
    packages=list(PACKAGES),
    package_dir=PACKAGES,
    ext_modules=COMPILED,
    package_data={"squall": ["*.thrift", "squall_thrift.json"], "squall.conf": ["*.yaml"], "squall.ui": ["templates/*.html", "static/*"]},
    # what runtime processes need, and so what ships to every YARN container
    install_requires=RUNTIME,
    extras_require={
        "yarn": YARN,
        "reports": REPORTS,
        "solver": SOLVER,
        "ui": UI,
        "hdfs": HDFS,
        "kafka": KAFKA,
        "profile": PROFILE,
        "all": YARN + REPORTS + SOLVER + UI + HDFS + KAFKA + PROFILE,
        # selenium drives Debian's chromium through /usr/bin/chromedriver (the Makefile installs both)
        "test": ["pytest>=7", "pytest-timeout>=2.1", "hypothesis>=6.50", "selenium>=4.10"],
    },
    entry_points={"console_scripts": ["squall = squall.cli:main"],
                  # squall.testing's fixtures (squall_cluster, squall_zookeeper, squall_zk_cluster) in every pytest run
                  "pytest11": ["squall = squall.testing.plugin"]},
)
