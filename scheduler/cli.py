"""``squall submit|kill|activate|deactivate|restart|update|list|show|logs|clean``."""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
from types import FrameType
from typing import Callable, Optional

from squall.commandline import (
    Subcommands,
    add_config_options,
    add_config_path_option,
    add_json_option,
    load_topology,
    print_json,
)
from squall.conf import base_config
from squall.errors import SquallError
from squall.scheduler import actions, changes, from_report, inspection, launcher, logs, manager, shipped_files, views
from squall.scheduler.base import LaunchOptions
from squall.state import Kind, StateManager, make_state_manager, open_state_manager
from squall.topology import valid_name

StateCommand = Callable[[argparse.Namespace, StateManager], int]


def register(sub: Subcommands) -> None:
    p = sub.add_parser("submit", help="launch a topology and wait until it runs")
    p.add_argument("file", help="topology file (.py)")
    p.add_argument("--name", help="run under this name instead of the topology's own")
    p.add_argument("--cluster", default="local", help="where to run it: local (default) or yarn")
    p.add_argument("--queue", help="YARN queue (sets squall.yarn.queue)")
    p.add_argument("--dry-run", action="store_true",
                   help="print what would be launched (on YARN the Skein application spec as YAML); write nothing")
    p.add_argument("--spec-out", metavar="FILE",
                   help="prepare everything (state, staged files) but launch nothing: write the launch "
                        "description (on YARN the Skein spec) to FILE for your own tooling")
    p.add_argument("--files", action="extend", nargs="+", default=[], metavar="PATH[#ALIAS]",
                   help="ship each file to every task, which reads it at context.get_file(ALIAS) (ALIAS: the "
                        "file's name unless given)")
    add_config_options(p)
    p.set_defaults(func=cmd_submit)

    for name, func, text in (
        ("kill", cmd_kill, "stop a topology and remove it (its logs and metrics stay)"),
        ("activate", cmd_activate, "resume a deactivated topology's spouts"),
        ("deactivate", cmd_deactivate, "pause a topology's spouts"),
        ("clean", cmd_clean, "delete a stopped topology's run folders (logs, metrics)"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("name", help="topology name")
        _state_options(p)
        p.set_defaults(func=with_state(func))

    p = sub.add_parser("restart", help="restart a topology's containers")
    p.add_argument("name", help="topology name")
    p.add_argument("--container", type=int, help="only this container (default: all)")
    _state_options(p)
    p.set_defaults(func=with_state(cmd_restart))

    p = sub.add_parser("update", help="change a running topology's parallelism and instance resources, or "
                                      "ship new versions of its files",
                       description="Repack a running topology for new parallelism and resources, moving as "
                                   "little as possible (containers are added or removed as the caps require), "
                                   "and start and stop only the difference. Prints the new plan and its "
                                   "difference first; --dry-run stops there. With --files it ships new versions "
                                   "of files shipped at submit instead (docs/debugging.md).")
    p.add_argument("name", help="topology name")
    p.add_argument("--component-parallelism", action="append", default=[], metavar="COMPONENT=N",
                   help="new parallelism of a component (repeatable)")
    p.add_argument("--component-cpu", action="append", default=[], metavar="COMPONENT=CORES",
                   help="new cpu of each instance of a component (squall.component.cpu; repeatable)")
    p.add_argument("--component-ram", action="append", default=[], metavar="COMPONENT=MB",
                   help="new memory of each instance of a component (squall.component.ram.mb; repeatable)")
    p.add_argument("--config-property", action="append", default=[], metavar="[COMPONENT:]KEY=VALUE",
                   help="a resource key (squall.component.cpu|ram.mb|disk.mb) for one component, or for every "
                        "component without COMPONENT: (repeatable)")
    p.add_argument("--from-report", metavar="DIR", help="apply a capacity report's parallelism and resources")
    p.add_argument("--files", action="extend", nargs="+", default=[], metavar="PATH#ALIAS",
                   help="ship a new version of each file shipped at submit as ALIAS; every task switches to it "
                        "and its on_file_update(ALIAS, path) is called (an update of its own)")
    p.add_argument("--dry-run", action="store_true", help="print the new plan and its difference; apply nothing")
    _state_options(p)
    add_json_option(p)
    p.set_defaults(func=with_state(cmd_update))

    p = sub.add_parser("list", help="running topologies")
    _state_options(p)
    add_json_option(p)
    p.set_defaults(func=with_state(cmd_list))

    p = sub.add_parser("show", help="status, packing plan and physical plan of a topology")
    p.add_argument("name", help="topology name")
    _state_options(p)
    add_json_option(p)
    p.set_defaults(func=with_state(cmd_show))

    p = sub.add_parser("logs", help="print (or follow) a topology's process logs")
    p.add_argument("name", help="topology name")
    p.add_argument("--component", help="only this component's instances")
    p.add_argument("--task", type=int, help="only this task id")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing what is appended")
    p.add_argument("--grep", metavar="REGEX", help="only the lines this regular expression matches, from every "
                   "container (each searches its own logs, rotated ones too), newest first with file and line")
    p.add_argument("--since", metavar="T", help="with --grep: lines from T on: a duration back (90s, 10m, 2h, 1d) "
                   "or a local time (2026-11-26T15:04:05)")
    p.add_argument("--limit", type=int, default=inspection.DEFAULT_LIMIT,
                   help=f"with --grep: at most this many lines (default {inspection.DEFAULT_LIMIT})")
    add_json_option(p)
    _state_options(p)
    p.set_defaults(func=with_state(cmd_logs))


def _state_options(parser: argparse.ArgumentParser) -> None:
    add_config_path_option(parser)


def with_state(command: StateCommand) -> Callable[[argparse.Namespace], int]:
    """``command(args, state)`` as a CLI function: the configured state manager, closed afterwards
    (a ZooKeeper session left open per command would pile up on the server)."""

    def run(args: argparse.Namespace) -> int:
        with open_state_manager(getattr(args, "config_path", None)) as state:
            return command(args, state)

    return run


# ------------------------------------------------------------------ submit
def cmd_submit(args: argparse.Namespace) -> int:
    if args.queue is not None:
        if args.cluster != "yarn":
            raise SquallError("--queue: only --cluster yarn has queues")
        args.config_property = (args.config_property or []) + [f"squall.yarn.queue={args.queue}"]
    if args.dry_run and args.spec_out:
        raise SquallError("--dry-run writes nothing; --spec-out writes the state and the spec: give one")
    files = shipped_files.parse(args.files)
    topology, base = load_topology(args)
    plan = topology.plan
    if args.name:
        if not valid_name(args.name):
            raise SquallError(f"--name {args.name!r}: use letters, digits, '_', '.' and '-', starting with a letter or digit")
        plan.name = args.name
    if args.dry_run:
        sys.stdout.write(launcher.dry_run(plan, base, args.cluster, files))
        return 0
    options = LaunchOptions(spec_out=os.path.abspath(args.spec_out) if args.spec_out else None)
    state = make_state_manager(base)
    state.start()
    # SIGTERM cleans up like Ctrl-C: submit kills what it started and removes the state
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        execution = launcher.submit(plan, state, base, cluster=args.cluster, progress=_progress_printer(),
                                    options=options, files=files)
        packing = state.get(Kind.PACKING_PLAN, plan.name)
    finally:
        signal.signal(signal.SIGTERM, previous)
        state.close()
        if sys.stderr.isatty():
            sys.stderr.write("\n")
    if options.spec_out:
        print(f"topology {plan.name!r} is prepared: {len(packing.containers)} containers (+ topology master); "
              f"the application spec is in {options.spec_out}")
        print(f"  submit it with: skein application submit {options.spec_out}")
        print(f"  it shows as SUBMITTED until its containers register (squall show {plan.name})")
        return 0
    instances = sum(len(c.instances) for c in packing.containers)
    print(f"topology {plan.name!r} is running: {instances} instances in {len(packing.containers)} "
          f"containers (+ topology master)")
    print(f"  logs:    {os.path.join(execution.run_dir, 'logs')}")
    print(f"  metrics: {os.path.join(execution.run_dir, 'metrics')}")
    return 0


def _interrupt(signum: int, frame: Optional[FrameType]) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _progress_printer() -> Callable[[launcher.Progress], None]:
    tty = sys.stderr.isatty()
    last = [-1]

    def show(p: launcher.Progress) -> None:
        if tty:
            bar = "#" * int(20 * p.registered / max(p.total, 1))
            sys.stderr.write(f"\rstarting [{bar:<20}] {p.registered}/{p.total} instances registered ({p.elapsed:.1f}s)")
            sys.stderr.flush()
        elif p.registered != last[0]:
            print(f"starting: {p.registered}/{p.total} instances registered", file=sys.stderr)
        last[0] = p.registered

    return show


# ------------------------------------------------------------------- control
def cmd_kill(args: argparse.Namespace, state: StateManager) -> int:
    print(actions.kill(state, args.name))
    return 0


def cmd_activate(args: argparse.Namespace, state: StateManager) -> int:
    print(actions.activate(state, args.name))
    return 0


def cmd_deactivate(args: argparse.Namespace, state: StateManager) -> int:
    print(actions.deactivate(state, args.name))
    return 0


def cmd_restart(args: argparse.Namespace, state: StateManager) -> int:
    print(actions.restart(state, args.name, args.container))
    return 0


def cmd_update(args: argparse.Namespace, state: StateManager) -> int:
    if args.files:
        return _update_files(args, state)
    update = _update_of(args)
    base = base_config(args.config_path)
    planned = manager.plan(state, args.name, update, base)
    if not args.json:
        print("\n".join(changes.describe(planned)))
        sys.stdout.flush()
    outcome = actions.update(state, args.name, update, base, planned, args.dry_run)
    if args.json:
        print_json({**changes.diff_json(outcome.planned), "dry_run": args.dry_run, "applied": outcome.applied})
    else:
        print(outcome.line)
    return 0


def _update_files(args: argparse.Namespace, state: StateManager) -> int:
    if args.from_report or args.component_parallelism or args.component_cpu or args.component_ram \
            or args.config_property:
        raise SquallError("update --files ships files and changes nothing else: give the other changes in "
                          "an update of their own")
    entries = manager.update_files(state, args.name, shipped_files.parse(args.files), args.dry_run)
    if args.json:
        print_json({"files": [shipped_files.as_json(e) for e in entries], "dry_run": args.dry_run,
                    "applied": not args.dry_run})
        return 0
    print("\n".join(shipped_files.describe(entries)))
    print(shipped_files.shipped_line(args.name, args.dry_run))
    return 0


def _update_of(args: argparse.Namespace) -> changes.TopologyUpdate:
    """The update the command line asks for: a report's, or the options'."""
    options = (args.component_parallelism or args.component_cpu or args.component_ram or args.config_property)
    if bool(args.from_report) == bool(options):
        raise SquallError("update: give either --component-parallelism COMPONENT=N or --from-report DIR (and "
                          "--component-cpu, --component-ram or --config-property to resize instances)")
    if args.from_report:
        return from_report.read_update(args.from_report, args.name)
    sizes, every = changes.parse_config_properties(args.config_property)
    for texts, option, key, kind in ((args.component_cpu, "--component-cpu", "squall.component.cpu", float),
                                     (args.component_ram, "--component-ram", "squall.component.ram.mb", int)):
        for component, value in changes.parse_assignments(texts, option, kind).items():
            sizes.setdefault(component, {})[key] = value
    return changes.TopologyUpdate(
        parallelism=changes.parse_assignments(args.component_parallelism, "--component-parallelism", int),
        component_config=sizes, config=every)


def cmd_clean(args: argparse.Namespace, state: StateManager) -> int:
    if state.get(Kind.EXECUTION_STATE, args.name) is not None:
        raise SquallError(f"topology {args.name!r} is running; kill it before cleaning its runs")
    home = launcher.topology_home(args.name)
    if not os.path.isdir(home):
        raise SquallError(f"topology {args.name!r} has no runs in {home}")
    shutil.rmtree(home)
    print(f"removed {home}")
    return 0


# -------------------------------------------------------------------- views
def cmd_list(args: argparse.Namespace, state: StateManager) -> int:
    rows = views.list_data(state)
    if args.json:
        print_json(rows)
    else:
        print(views.list_text(rows))
    return 0


def cmd_show(args: argparse.Namespace, state: StateManager) -> int:
    data = views.show_data(state, args.name)
    if args.json:
        print_json(data)
    else:
        print(views.show_text(data))
    return 0


def cmd_logs(args: argparse.Namespace, state: StateManager) -> int:
    if args.grep is not None:
        return _grep_logs(args, state)
    if args.since is not None or args.json:
        raise SquallError("logs: --since and --json go with --grep REGEX")
    execution = state.get(Kind.EXECUTION_STATE, args.name)
    if execution is not None and execution.cluster != "local":
        print(logs.remote_logs_text(state, execution))
        return 0
    files = logs.local_logs(args.name, logs.run_dir_of(state, args.name), args.component, args.task)
    logs.print_logs(files, sys.stdout, args.follow)
    return 0


def _grep_logs(args: argparse.Namespace, state: StateManager) -> int:
    if args.task is not None or args.follow:
        raise SquallError("logs --grep: --task and --follow do not go with it (narrow with --component, --since)")
    found = inspection.search_logs(state, args.name, args.grep, args.component, args.since, args.limit)
    if args.json:
        print_json(found)
    elif found["matches"]:
        print("\n".join(inspection.search_text(found)))
    for note in inspection.search_notes(found):
        print(f"squall: {note}", file=sys.stderr)
    return 0
