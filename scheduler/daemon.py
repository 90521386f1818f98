"""The entry point shared by a topology's long-running helper processes (the local supervisor, the
YARN application driver): ``--topology T --state FILE``, one log format, the state opened from the
run's state address file and closed on the way out."""
from __future__ import annotations

import argparse
import logging
import sys
from typing import Callable, Optional

from squall.processargs import DaemonArgs
from squall.state import StateManager

log = logging.getLogger(__name__)


def topology_daemon(argv: Optional[list[str]], prog: str, description: str, role: str,
                    body: Callable[[argparse.Namespace, StateManager], int],
                    arguments: Callable[[argparse.ArgumentParser], None] = lambda parser: None) -> int:
    """Parse the flags (``DaemonArgs``' and what ``arguments`` adds), set up logging as ``role``, open the
    state and run ``body(args, state)``; exit 2 when the state address cannot be opened."""
    from squall.state import StateAddress, StateError

    p = argparse.ArgumentParser(prog=prog, description=description)
    DaemonArgs.add_arguments(p)
    arguments(p)
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
