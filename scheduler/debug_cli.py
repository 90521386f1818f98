"""``squall set-log-level|sample|events``: debugging a running topology (docs/debugging.md)."""
from __future__ import annotations

import argparse
import sys

from squall.commandline import Subcommands, add_config_path_option, add_json_option, print_json
from squall.scheduler import debugging, events
from squall.scheduler.cli import with_state
from squall.state import Kind, StateManager


def register(sub: Subcommands) -> None:
    p = sub.add_parser("set-log-level", help="set loggers' levels in a running topology's processes",
                       description="Set the level of loggers in every process of a running topology (or of one "
                                   "component's tasks), applied within 2 s, reverted after SECONDS. LOGGER: root "
                                   "(or ROOT), a squall.* logger, or a user's (a component's self.logger is "
                                   "named module.Class). LEVEL: DEBUG, INFO, WARNING, ERROR, CRITICAL.")
    p.add_argument("name", help="topology name")
    _set_log_level_options(p, argparse.REMAINDER)
    p.set_defaults(func=lambda args: with_state(cmd_set_log_level)(_intermixed(args)))

    p = sub.add_parser("sample", help="write a share of a running topology's emits to its events logs",
                       description="Sample P%% of the emits of every component (or of one), chosen at random per "
                                   "emit, into each container's events log (read them with squall events).")
    p.add_argument("name", help="topology name")
    p.add_argument("--component", help="only this component's emits")
    p.add_argument("--percent", metavar="P", help="percent of the emits sampled, 0-100")
    p.add_argument("--seconds", metavar="S", help="stop after S seconds (default: until --off)")
    p.add_argument("--off", action="store_true", help="stop sampling")
    add_config_path_option(p)
    add_json_option(p)
    p.set_defaults(func=with_state(cmd_sample))

    p = sub.add_parser("events", help="print a topology's sampled emits (squall sample, topology.debug)")
    p.add_argument("name", help="topology name")
    p.add_argument("--component", help="only this component's emits")
    p.add_argument("--limit", type=int, help="only the newest N")
    p.add_argument("--follow", "-f", action="store_true", help="print the events written from now on, until "
                                                                 "interrupted")
    add_config_path_option(p)
    add_json_option(p)
    p.set_defaults(func=with_state(cmd_events))


def _set_log_level_options(parser: argparse.ArgumentParser, levels: str = "*") -> None:
    parser.add_argument("levels", nargs=levels, metavar="LOGGER=LEVEL[:SECONDS]", help="e.g. root=DEBUG:30")
    parser.add_argument("--component", help="only the processes of this component's tasks")
    parser.add_argument("--reset", action="append", default=[], metavar="LOGGER",
                        help="give a logger back its own level now (repeatable)")
    add_config_path_option(parser)
    add_json_option(parser)


def _intermixed(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with the levels and options that followed the first option parsed: argparse ends a
    command's positional arguments at its first option, so they arrive unparsed in ``args.levels``."""
    rest = argparse.ArgumentParser(prog="squall set-log-level", add_help=False)
    _set_log_level_options(rest)
    later = rest.parse_intermixed_args(args.levels)
    return argparse.Namespace(**{**vars(args), "levels": later.levels, "reset": args.reset + later.reset,
                                 **{k: getattr(later, k) for k in ("component", "config_path", "json")
                                    if getattr(later, k)}})


def cmd_set_log_level(args: argparse.Namespace, state: StateManager) -> int:
    debugging.set_log_levels(state, args.name, args.levels, args.reset, args.component)
    return _print_settings(args, state)


def cmd_sample(args: argparse.Namespace, state: StateManager) -> int:
    debugging.set_sampling(state, args.name, args.percent, args.component, args.seconds, args.off)
    return _print_settings(args, state)


def _print_settings(args: argparse.Namespace, state: StateManager) -> int:
    view = debugging.debug_view(state, args.name)
    if args.json:
        print_json(view)
    else:
        lines = debugging.debug_lines(view) or ["nothing set"]
        print("\n".join([f"topology {args.name!r} (in force within 2 s):"] + ["  " + line for line in lines]))
    return 0


def cmd_events(args: argparse.Namespace, state: StateManager) -> int:
    if args.component is not None and state.get(Kind.EXECUTION_STATE, args.name) is not None:
        debugging.check_component(state, args.name, args.component)
    render = events.event_json if args.json else events.event_text
    if args.follow:
        events.follow(lambda since: events.read_events(state, args.name, args.component, since=since), sys.stdout,
                      render)
        return 0
    found = events.read_events(state, args.name, args.component, args.limit)
    if args.json:
        print_json(found)
    else:
        print("\n".join(map(events.event_text, found)) if found else "no sampled emit yet")
    return 0
