"""The command line of a topology's runtime processes, built and parsed in one place.

Every launcher (the local supervisor, a YARN service script, the runtime test
harness, the executor for its children) builds the command with
``ProcessArgs.command``; every runtime process parses its flags with
``ProcessArgs.parse``; the local scheduler recognises the processes of a run
with ``ProcessArgs.from_cmdline`` (psutil's command line of a process).

``python -m squall.runtime.executor --topology T --container N --state FILE``
is the runtime contract: FILE names the run's state address
(``squall.state.StateAddress``). Processes an executor starts add ``--role``,
``--task`` (an instance) and ``--launch`` (the ports of their container's
daemons); on YARN an executor gets ``--service S`` instead of ``--container N``
and claims a free container id of that Skein service first; ``--log-dir``
puts every log and metrics file of the container in one folder.

``DaemonArgs`` is the same for a topology's helper processes (the local
supervisor and its keeper, the YARN application driver): ``--topology T
--state FILE``.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Optional, Sequence

ROLES = ("executor", "tmaster", "stmgr", "metricsmgr", "instance", "health")
EXECUTOR_MODULE = "squall.runtime.executor"
PROCESS_MODULE = "squall.runtime.process"
# Roles that run a module of their own, outside runtime/ (which may not import their layer).
ROLE_MODULES = {"executor": EXECUTOR_MODULE, "health": "squall.health.manager"}


class _Refused(Exception):
    """argparse refused a command line read back from a process (not ours to exit on)."""


class _QuietParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _Refused(message)


@dataclass(frozen=True)
class ProcessArgs:
    topology: str
    container: int  # -1 until an executor started with ``service`` claimed its id
    state: str  # the state address file
    role: str = "executor"
    task: Optional[int] = None
    launch: Optional[str] = None
    log_dir: Optional[str] = None  # every log and metrics file here (YARN); default: the run folder
    service: Optional[str] = None  # claim a container id of this YARN service

    @property
    def module(self) -> str:
        return ROLE_MODULES.get(self.role, PROCESS_MODULE)

    def argv(self) -> list[str]:
        """The flags that recreate these arguments."""
        out = ["--topology", self.topology]
        out += ["--service", self.service] if self.service is not None else ["--container", str(self.container)]
        out += ["--state", self.state]
        if self.role != "executor":
            out += ["--role", self.role]
        if self.task is not None:
            out += ["--task", str(self.task)]
        if self.launch is not None:
            out += ["--launch", self.launch]
        if self.log_dir is not None:
            out += ["--log-dir", self.log_dir]
        return out

    def command(self, python: str) -> list[str]:
        """The whole command: ``python -m <module> <flags>``."""
        return [python, "-m", self.module, *self.argv()]

    @classmethod
    def parse(cls, argv: Optional[Sequence[str]], prog: str) -> "ProcessArgs":
        """The flags of a runtime process; a bad one exits with argparse's message (status 2)."""
        return cls._parse(argparse.ArgumentParser(prog=prog, description="A Squall runtime process."), argv)

    @classmethod
    def from_cmdline(cls, cmdline: Sequence[str]) -> Optional["ProcessArgs"]:
        """The arguments of a process's whole command line (psutil's ``cmdline()``), None when it is not a
        runtime process of Squall's."""
        module = _module(cmdline)
        if module not in (PROCESS_MODULE, *ROLE_MODULES.values()):
            return None
        try:
            return cls._parse(_QuietParser(add_help=False), list(cmdline)[list(cmdline).index(module) + 1:])
        except _Refused:
            return None

    @classmethod
    def _parse(cls, p: argparse.ArgumentParser, argv: Optional[Sequence[str]]) -> "ProcessArgs":
        p.add_argument("--topology", required=True)
        which = p.add_mutually_exclusive_group(required=True)
        which.add_argument("--container", type=int)
        which.add_argument("--service", help="executor on YARN: claim a free container id of this Skein service")
        p.add_argument("--state", required=True, help="the topology's state address file (state.json)")
        p.add_argument("--role", default="executor", choices=ROLES)
        p.add_argument("--task", type=int)
        p.add_argument("--launch")
        p.add_argument("--log-dir", help="the container's folder for every log and metrics file")
        a = p.parse_args(argv)
        if a.service is not None and a.role != "executor":
            p.error("--service: only an executor claims its container")
        container = -1 if a.container is None else a.container
        return cls(a.topology, container, a.state, a.role, a.task, a.launch, a.log_dir, a.service)


@dataclass(frozen=True)
class DaemonArgs:
    """``python -m <module> --topology T --state FILE``: a topology's helper process."""

    module: str
    topology: str
    state: str

    def command(self, python: str) -> list[str]:
        return [python, "-m", self.module, "--topology", self.topology, "--state", self.state]

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        """The flags every helper takes (its own parser adds the rest)."""
        parser.add_argument("--topology", required=True)
        parser.add_argument("--state", required=True, help="the topology's state address file (state.json)")

    @classmethod
    def from_cmdline(cls, cmdline: Sequence[str]) -> Optional["DaemonArgs"]:
        """The arguments of a helper's command line, None when it is not one of ``squall.*``."""
        module = _module(cmdline)
        if module is None or not module.startswith("squall."):
            return None
        p = _QuietParser(add_help=False)
        cls.add_arguments(p)
        try:
            a, _ = p.parse_known_args(list(cmdline)[list(cmdline).index(module) + 1:])
        except _Refused:
            return None
        return cls(module, a.topology, a.state)


def _module(cmdline: Sequence[str]) -> Optional[str]:
    """The module of a ``python -m module ...`` command line."""
    args = list(cmdline)
    if "-m" not in args[1:]:
        return None
    at = args.index("-m", 1)
    return args[at + 1] if at + 1 < len(args) else None
