"""The ``squall`` command.

A thin argparse shell: each layer contributes its subcommands through a
``register(subparsers)`` function in its own ``cli`` module (listed in
``_PLUGINS``), so this module imports no layer until a command needs it.
User errors print one ``squall: error: ...`` line and exit 2; ``--debug``
shows the traceback.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from typing import Optional, Sequence

from squall import __version__
from squall.commandline import add_config_options, add_json_option, format_table, load_topology, print_json
from squall.conf import ConfigError, registry
from squall.errors import SquallError
from squall.logical import grouping_name, kind_name

EXIT_USER_ERROR = 2
EXIT_NOT_AVAILABLE = 3

# (module, the commands it brings). A module that does not exist yet leaves
# placeholders that say so and exit non-zero.
_PLUGINS = [
    ("squall.packing.cli", ["pack"]),
    (
        "squall.scheduler.cli",
        ["submit", "kill", "activate", "deactivate", "restart", "update", "list", "show", "logs", "clean"],
    ),
    ("squall.runtime.cli", ["metrics"]),
    ("squall.reports.cli", ["report"]),
    ("squall.yarn.cli", ["cluster", "rebalance", "yarn"]),
    ("squall.ui.cli", ["ui"]),
    ("squall.health.cli", ["health"]),
    ("squall.scheduler.inspection_cli", ["profile"]),
    ("squall.scheduler.debug_cli", ["set-log-level", "sample", "events"]),
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="squall", description="Squall: Heron/Storm-style stream processing in Python."
    )
    parser.add_argument("--version", action="version", version=f"squall {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    validate = sub.add_parser("validate", help="check a topology file and summarise it")
    validate.add_argument("file", help="topology file (.py)")
    add_config_options(validate)
    add_json_option(validate)
    validate.set_defaults(func=cmd_validate)

    config = sub.add_parser("config", help="configuration keys")
    config_sub = config.add_subparsers(dest="config_command", metavar="SUBCOMMAND")
    config_sub.required = True
    config_list = config_sub.add_parser("list", help="every key with its type, default and doc")
    add_json_option(config_list)
    config_list.set_defaults(func=cmd_config_list)

    for module_name, commands in _PLUGINS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name != module_name:
                raise
            for command in commands:
                placeholder = sub.add_parser(command, help="(not available yet)", add_help=True)
                placeholder.add_argument("rest", nargs=argparse.REMAINDER)
                placeholder.set_defaults(func=_not_available)
            continue
        module.register(sub)
    return parser


def _not_available(args: argparse.Namespace) -> int:
    print(f"squall: '{args.command}' is not available yet in this version of Squall", file=sys.stderr)
    return EXIT_NOT_AVAILABLE


def cmd_validate(args: argparse.Namespace) -> int:
    topology, _ = load_topology(args)
    plan = topology.plan
    rows = []
    for c in plan.components:
        outputs = " ".join(f"{s.name}({','.join(s.fields)}){'*' if s.direct else ''}" for s in c.outputs)
        inputs = " ".join(
            f"{i.component}/{i.stream}:{grouping_name(i.grouping).lower()}"
            + (f"({','.join(i.fields)})" if i.fields else "")
            for i in c.inputs
        )
        rows.append((c.name, kind_name(c.kind).lower(), c.parallelism, outputs or "-", inputs or "-"))
    if args.json:
        print_json(
            {
                "topology": plan.name,
                "valid": True,
                "total_tasks": topology.total_tasks(),
                "components": [
                    {"name": r[0], "kind": r[1], "parallelism": r[2], "outputs": r[3], "inputs": r[4]}
                    for r in rows
                ],
                "warnings": topology.warnings,
            }
        )
        return 0
    print(f"topology {plan.name!r} is valid ({plan.source_file})")
    print(format_table(["component", "kind", "par", "outputs", "inputs"], rows, right={"par"}))
    print(f"{len(rows)} components, {topology.total_tasks()} tasks")
    return 0


def cmd_config_list(args: argparse.Namespace) -> int:
    keys = list(registry().values())
    if args.json:
        print_json(
            [
                {
                    "name": k.name,
                    "type": k.type,
                    "default": k.default,
                    "nullable": k.nullable,
                    "choices": list(k.choices) if k.choices else None,
                    "min": k.min,
                    "max": k.max,
                    "doc": k.doc,
                }
                for k in keys
            ]
        )
        return 0
    rows = []
    for k in keys:
        kind = f"choice({'|'.join(k.choices)})" if k.choices else k.type
        rows.append((k.name, kind, "null" if k.default is None else k.default, k.doc))
    print(format_table(["key", "type", "default", "doc"], rows))
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except (SquallError, ConfigError) as e:
        if debug:
            traceback.print_exc()
        print(f"squall: error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
