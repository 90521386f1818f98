"""How many times an instance process reads conf/squall.yaml while it resolves its configuration.

Runs, in this process, the configuration steps an instance process takes at
start (``runtime/bootstrap.py``'s ``load_env``, the chains ``instance/loop.py``
asks for, ``make_instance`` of the task) for a task of examples/word_count.py,
and counts the ``open`` audit events of the site file (issue 29: it was read
6-8 times per instance process; 5 times in these steps at faad9f0, once since).

    .venv/bin/python bench/config_reads.py
"""
from __future__ import annotations

import os
import sys

from squall.chaining import chains
from squall.conf.resolve import SITE_FILE, site_config
from squall.idl import schema
from squall.loader import load_topology_file
from squall.logical import topology_config
from squall.runtime.instance import make_instance

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    topology = load_topology_file(os.path.join(ROOT, "examples", "word_count.py")).plan
    site_config.cache_clear()  # an instance process starts without it: its plan comes from the state manager
    reads = []
    sys.addaudithook(lambda event, args: reads.append(args[0]) if event == "open" and args and args[0] == SITE_FILE
                     else None)
    component = next(c.name for c in topology.components if c.kind == schema.ComponentKind.BOLT)
    config = topology_config(topology)  # load_env
    chains(topology)  # instance/loop.py: is the task the head of a chain?
    make_instance(topology, component, 1, 1, config)
    print(f"reads of {os.path.relpath(SITE_FILE, ROOT)} while a {component!r} instance resolves its "
          f"configuration: {len(reads)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
