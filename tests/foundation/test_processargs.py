"""The runtime processes' command line, built and parsed in one place; and the one stop routine."""
import signal
import subprocess
import sys

import psutil
import pytest

from squall.processargs import DaemonArgs, ProcessArgs
from squall.supervision import stop_processes


@pytest.mark.parametrize("args", [
    ProcessArgs("wc", 3, "/run/state.json"),
    ProcessArgs("wc", 1, "/run/state.json", role="instance", task=7, launch="/run/launch.json"),
    ProcessArgs("wc", -1, "$PWD/state.json", log_dir="/logs", service="containers-1024mb-1vc"),
    ProcessArgs("wc", 0, "/run/state.json", role="health", launch="/run/launch.json"),
])
def test_the_command_parses_back_to_the_same_arguments(args):
    command = args.command("/usr/bin/python3")
    assert command[:3] == ["/usr/bin/python3", "-m", args.module]
    assert ProcessArgs.parse(command[3:], "test") == args
    assert ProcessArgs.from_cmdline(command) == args


def test_the_health_manager_runs_its_own_module():
    assert ProcessArgs("wc", 0, "/r/state.json", role="health").module == "squall.health.manager"


def test_the_executor_command_is_the_runtime_contract():
    assert ProcessArgs("wc", 2, "/r/state.json").command("py") == [
        "py", "-m", "squall.runtime.executor", "--topology", "wc", "--container", "2", "--state", "/r/state.json"]


@pytest.mark.parametrize("cmdline", [
    ["python", "-m", "http.server"],
    ["python", "-m", "squall.runtime.executor", "--topology", "wc"],  # no container, no state
    ["python", "script.py", "--topology", "wc", "--container", "1", "--state", "s"],
    [],
])
def test_other_command_lines_are_not_runtime_processes(cmdline):
    assert ProcessArgs.from_cmdline(cmdline) is None


def test_a_bad_flag_is_refused_naming_it(capsys):
    with pytest.raises(SystemExit):
        ProcessArgs.parse(["--topology", "wc", "--service", "s", "--state", "f", "--role", "stmgr"], "test")
    assert "--service: only an executor claims its container" in capsys.readouterr().err


def test_daemon_args_round_trip():
    args = DaemonArgs("squall.scheduler.keeper", "wc", "/r/state.json")
    assert DaemonArgs.from_cmdline(args.command("py") + ["--adopt", "12"]) == args
    assert DaemonArgs.from_cmdline(["py", "-m", "other.module", "--topology", "wc", "--state", "s"]) is None


def test_stop_processes_sigterms_then_sigkills_what_ignores_it():
    polite = psutil.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    stubborn = psutil.Popen([sys.executable, "-c",
                             "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                             "print('ready', flush=True); time.sleep(600)"], stdout=subprocess.PIPE)
    assert stubborn.stdout.readline() == b"ready\n"
    stop_processes([polite, stubborn], grace=0.5)
    assert polite.returncode == -signal.SIGTERM
    assert stubborn.returncode == -signal.SIGKILL
    stubborn.stdout.close()
