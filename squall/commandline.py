"""Helpers shared by every ``squall`` subcommand: options, loading, output."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Iterable, Optional, Protocol, Sequence

from squall.conf import Config, base_config
from squall.conf.resolve import parse_properties
from squall.loader import load_topology_file
from squall.logical import with_overrides
from squall.preflight import check_components
from squall.topology import Topology
from squall.stateful import check_stateful
from squall.windowed_bolt import check_windows_complete


class Subcommands(Protocol):
    """What a layer's ``register`` adds its commands to (``ArgumentParser.add_subparsers()``'s answer)."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        ...


def add_config_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a config key above every other layer (repeatable)",
    )
    add_config_path_option(parser)


def add_config_path_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config-path", metavar="FILE", help="cluster config file (YAML key: value)")


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def load_topology(args: argparse.Namespace) -> tuple[Topology, Config]:
    """Load ``args.file``, apply the command line's config, print build warnings.

    Returns the topology (overrides recorded in its plan) and the base config
    (defaults < site file < ``--config-path``) it is to be resolved against.
    """
    base = base_config(getattr(args, "config_path", None))
    topology = load_topology_file(args.file)
    overrides = parse_properties(getattr(args, "config_property", []) or [])
    if overrides:
        topology.plan = with_overrides(topology.plan, overrides)
    check_windows_complete(topology.plan, base)
    check_stateful(topology.plan, base)
    check_components(topology.plan, base)
    for warning in topology.warnings:
        warn(warning)
    return topology, base


def warn(message: str) -> None:
    print(f"squall: warning: {message}", file=sys.stderr)


def print_json(data: object) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def format_table(headers: Sequence[str], rows: Iterable[Sequence[object]], right: Optional[set] = None) -> str:
    """A plain aligned text table; columns named in ``right`` are right-aligned."""
    right = right or set()
    rows = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(v)) for w, v in zip(widths, row)]

    def line(values: Sequence[str]) -> str:
        cells = [
            v.rjust(w) if h in right else v.ljust(w) for h, v, w in zip(headers, values, widths)
        ]
        return "  ".join(cells).rstrip()

    out = [line(list(headers)), line(["-" * w for w in widths])]
    out.extend(line(row) for row in rows)
    return "\n".join(out)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)
