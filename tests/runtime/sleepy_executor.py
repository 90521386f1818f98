"""An executor whose children are sleeping Python processes, for tests of its loop
(tests/runtime/test_executor_loop.py): the real loop, restarts, plan changes and stop; a child's command
line ends with its process name. With ``SLEEPY_IGNORE_SIGTERM`` set, children ignore SIGTERM.

``python sleepy_executor.py --topology T --container N --state FILE``
"""
import os
import sys

from squall.processargs import ProcessArgs
from squall.runtime.bootstrap import load_env, setup_logging
from squall.runtime.executor import Executor, ProcessSpec

IGNORE = "signal.signal(signal.SIGTERM, signal.SIG_IGN); " if os.environ.get("SLEEPY_IGNORE_SIGTERM") else ""


class SleepyExecutor(Executor):
    def command(self, spec: ProcessSpec) -> list:
        return [sys.executable, "-c", f"import signal, time; {IGNORE}time.sleep(600)", spec.name]


if __name__ == "__main__":
    args = ProcessArgs.parse(sys.argv[1:], "sleepy_executor.py")
    setup_logging("executor", args.container)
    env = load_env(args)
    try:
        sys.exit(SleepyExecutor(env).run())
    finally:
        env.close()
