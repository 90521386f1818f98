"""``squall health NAME``: what the health manager sees and decided; ``--mode M``, ``--apply``."""
from __future__ import annotations

import argparse
from typing import Protocol

from squall.commandline import add_config_path_option, add_json_option, format_table, print_json
from squall.health import view
from squall.state import open_state_manager


class Subcommands(Protocol):
    """What ``ArgumentParser.add_subparsers()`` returns, as this module uses it."""

    def add_parser(self, name: str, **kwargs: object) -> argparse.ArgumentParser:
        ...


def register(sub: Subcommands) -> None:
    p = sub.add_parser("health", help="a running topology's health: symptoms, recommendations, decisions")
    p.add_argument("name", help="topology name")
    add_config_path_option(p)
    change = p.add_mutually_exclusive_group()
    change.add_argument("--mode", metavar="MODE", help="switch the health manager: off, recommend or auto")
    change.add_argument("--apply", action="store_true",
                        help="recommend mode: apply the pending recommendation at the manager's next round")
    add_json_option(p)
    p.set_defaults(func=cmd_health)


def cmd_health(args: argparse.Namespace) -> int:
    with open_state_manager(args.config_path) as state:
        if args.mode is not None:
            control = view.set_mode(state, args.name, args.mode)
            print(f"{args.name}: health manager mode {control.mode} (from its next round)")
            return 0
        if args.apply:
            decision = view.request_apply(state, args.name)
            print(f"{args.name}: {decision.id} will be applied at the health manager's next round: "
                  f"{decision.summary}")
            return 0
        shown = view.health_view(state, args.name)
    if args.json:
        print_json(shown)
    else:
        print(format_health(shown))
    return 0


def format_health(shown: dict) -> str:
    """The text of ``squall health``: the pending recommendation first, then symptoms and history."""
    mode = shown["mode"] + ("" if shown["mode"] == shown["configured_mode"] else
                            f" (configured: {shown['configured_mode']})")
    lines = [f"{shown['topology']}: health manager mode {mode}"]
    pending = shown["pending"]
    if pending is not None:
        lines += ["", f"recommended: {pending['summary']}",
                  f"  why: {pending['formula']}",
                  f"  expected: {_pairs(pending['expected'])}"]
        if pending["cost"]:
            lines.append(f"  cost: {_pairs(pending['cost'])}")
    symptoms = shown["symptoms"]
    if symptoms:
        columns = ["parallelism", "execute_rate", "busy_max", "queue_depth_max", "backpressure_ms"]
        rows = [[name] + ["-" if s.get(k) is None else s.get(k) for k in columns] for name, s in symptoms.items()]
        lines += ["", format_table(["component"] + columns, rows, right=set(columns))]
    else:
        lines += ["", "no observation yet"]
    if shown["history"]:
        rows = [[d["id"], d["status"], d["diagnosis"], d["summary"] + (f" ({d['reason']})" if d["reason"] else "")]
                for d in shown["history"]]
        lines += ["", format_table(["decision", "status", "diagnosis", "summary"], rows)]
    return "\n".join(lines)


def _pairs(figures: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in figures.items())
