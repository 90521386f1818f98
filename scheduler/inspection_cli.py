"""``squall profile NAME --task T --stacks | --flame SECONDS | --memory [SECONDS]``: a live look inside one
task's process (a chained task: its chain's), taken by its container's debug server (docs/debugging.md)."""
from __future__ import annotations

import argparse

from squall.commandline import Subcommands, add_config_path_option, add_json_option, print_json
from squall.scheduler import inspection
from squall.scheduler.cli import with_state
from squall.state import StateManager

MEMORY_SECS = 5.0


def register(sub: Subcommands) -> None:
    p = sub.add_parser("profile", help="every thread's stack, a flame graph or the top allocations of a task",
                       description="Look inside a running task's process without restarting it: --stacks prints "
                                   "every thread's Python stack (like jstack); --flame SECONDS samples it and "
                                   "saves an SVG flame graph; --memory lists tracemalloc's top allocations over "
                                   "a few seconds. Results are kept in the container's debug folder.")
    p.add_argument("name", help="topology name")
    p.add_argument("--task", type=int, required=True, help="task id (squall show lists them)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--stacks", action="store_true", help="every thread's Python stack now")
    what.add_argument("--flame", type=float, metavar="SECONDS", help="a sampled CPU profile as an SVG flame graph")
    what.add_argument("--memory", type=float, nargs="?", const=MEMORY_SECS, metavar="SECONDS",
                      help=f"the top allocations made over SECONDS (default {MEMORY_SECS:g}) and still held")
    add_json_option(p)
    add_config_path_option(p)
    p.set_defaults(func=with_state(cmd_profile))


def cmd_profile(args: argparse.Namespace, state: StateManager) -> int:
    kind = "stacks" if args.stacks else "flame" if args.flame is not None else "memory"
    answer = inspection.profile(state, args.name, args.task, kind, args.flame if kind == "flame" else args.memory)
    if args.json:
        print_json(answer)
        return 0
    where = f"task {answer['task']} ({answer['process']}, pid {answer['pid']}, container {answer['container']} " \
            f"on {answer['host']})"
    if kind == "stacks":
        print(f"stacks of {where}:")
        print(answer["text"].rstrip("\n"))
        print("kept as:")
    elif kind == "flame":
        total = f"{answer['total']} {answer['unit']}, " if answer.get("total") is not None else ""
        print(f"flame graph of {where} ({total}drawn by {answer['profiler']}), saved as:")
    else:
        print(f"top allocations of {where}:")
        print("\n".join(inspection.memory_text(answer)))
        print("kept as:")
    print(answer["path"])  # kept on the container's host, in its debug folder
    return 0
