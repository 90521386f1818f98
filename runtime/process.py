"""Entry point of every runtime process the executor starts:

``python -m squall.runtime.process --topology T --container N --state-manager local
--state-root R --role stmgr|metricsmgr|tmaster|instance [--task T] --launch FILE``
"""
from __future__ import annotations

import logging
import sys
from typing import Optional

from squall.processargs import ProcessArgs
from squall.runtime.bootstrap import RuntimeStartError, load_env, setup_logging
from squall.runtime.debug_agent import DebugAgent
from squall.runtime.debugging import DebugSettings
from squall.runtime.readiness import take_ready_fd
from squall.supervision import die_with_parent

log = logging.getLogger("squall.runtime.process")


def main(argv: Optional[list] = None) -> int:
    take_ready_fd()
    args = ProcessArgs.parse(argv, "python -m squall.runtime.process")
    setup_logging(args.role, args.container, args.task)
    die_with_parent()
    try:
        env = load_env(args)
    except RuntimeStartError as e:
        log.error("%s", e)
        return 2
    agent = DebugAgent(env.debug_dir)  # stacks and profiles on its container's debug server's signal
    agent.install()
    # an instance applies its own, for its components (runtime/instance/loop.py)
    debug = DebugSettings(env.state, env.name).start() if args.role != "instance" else None
    try:
        if args.role == "tmaster":
            from squall.runtime import tmaster as role
        elif args.role == "stmgr":
            from squall.runtime import stmgr as role
        elif args.role == "metricsmgr":
            from squall.runtime import metricsmgr as role
        elif args.role == "instance":
            from squall.runtime import instance as role
        else:
            log.error("role %r is not a child process role", args.role)
            return 2
        return role.run(env)
    finally:
        agent.close()
        if debug is not None:
            debug.close()
        env.close()


if __name__ == "__main__":
    sys.exit(main())
