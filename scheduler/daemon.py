"""The entry point shared by a topology's long-running helper processes (the local supervisor, the
YARN application driver): ``--topology T --state FILE``, one log format, the state opened from the
run's state address file and closed on the way out."""
from __future__ import annotations

import argparse
import logging
import sys
from typing import Any, Callable, Optional

log = logging.getLogger(__name__)


def topology_daemon(argv: Optional[list], prog: str, description: str, role: str,
                    body: Callable[[argparse.Namespace, Any], int]) -> int:
    """Parse the flags, set up logging as ``role``, open the state and run ``body(args, state)``;
    exit 2 when the state address cannot be opened."""
    from squall.state import StateAddress, StateError

    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--topology", required=True)
    p.add_argument("--state", required=True, help="the topology's state address file (state.json)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s %(levelname)s [{role} %(process)d] %(name)s: %(message)s")
    try:
        state = StateAddress.read(args.state).open()
        state.start()
    except StateError as e:
        log.error("%s", e)
        return 2
    try:
        return body(args, state)
    finally:
        state.close()
