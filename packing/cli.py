"""``squall pack``: show how a topology would be packed, or compare every way."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Protocol

from squall.chaining import ChainPlan, chain_plan
from squall.commandline import add_config_options, add_json_option, format_table, load_topology, print_json
from squall.logical import topology_config
from squall.packing.errors import PackingError
from squall.packing.jsonplan import plan_to_json
from squall.packing.pack import pack
from squall.packing.request import ALGORITHMS, GRANULARITIES
from squall.packing.summary import plan_summary

if TYPE_CHECKING:
    from squall.conf import Config
    from squall.topology import Topology


class Subcommands(Protocol):
    """What ``ArgumentParser.add_subparsers()`` returns, as this module uses it."""

    def add_parser(self, name: str, **kwargs: object) -> argparse.ArgumentParser:
        ...


def register(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "pack",
        help="pack a topology's tasks into containers and show the plan",
        description="Pack a topology with the configured (or given) algorithm and granularity; "
        "--compare shows every algorithm x granularity side by side.",
    )
    parser.add_argument("file", help="topology file (.py)")
    parser.add_argument("--algorithm", metavar="A", help=f"one of {', '.join(ALGORITHMS)} (squall.packing.algorithm)")
    parser.add_argument(
        "--granularity", metavar="G", help=f"one of {', '.join(GRANULARITIES)} (squall.packing.granularity)"
    )
    parser.add_argument("--compare", action="store_true", help="every algorithm x granularity side by side")
    add_config_options(parser)
    add_json_option(parser)
    parser.set_defaults(func=cmd_pack)


def cmd_pack(args: argparse.Namespace) -> int:
    topology, base = load_topology(args)
    if args.compare:
        return _compare(args, topology, base)
    plan = pack(topology.plan, base, args.algorithm, args.granularity)
    config = topology_config(topology.plan, base)
    chaining = chain_plan(topology.plan, base, plan.granularity)
    if args.json:
        print_json({**plan_to_json(topology.name, plan), "summary": plan_summary(plan, config),
                    "chains": [list(chain) for chain in chaining.chains],
                    "edges": [edge.to_json() for edge in chaining.edges]})
        return 0
    print(f"topology {topology.name!r}: {plan.algorithm} packing at {plan.granularity} granularity, plan {plan.id}")
    rows = []
    for c in plan.containers:
        counts: dict = {}
        for i in c.instances:
            counts[i.id.component] = counts.get(i.id.component, 0) + 1
        held = ", ".join(f"{name} x{n}" for name, n in sorted(counts.items()))
        r = c.resources
        rows.append((c.id, r.cpu, r.ram_mb, r.disk_mb, held))
    print(format_table(["container", "cpu", "ram_mb", "disk_mb", "instances"], rows,
                       right={"container", "cpu", "ram_mb", "disk_mb"}))
    s = plan_summary(plan, config)
    print()
    for label in ("requested", "needed", "padding"):
        r = s[label]
        print(f"{label + ':':<14}cpu {r['cpu']:g}, ram {r['ram_mb']} MB, disk {r['disk_mb']} MB")
    yarn = s["yarn"]
    if "error" in yarn:
        print(f"{'yarn waste:':<14}n/a ({yarn['error']})")
    else:
        print(f"{'yarn waste:':<14}{yarn['waste_mb']} MB, {yarn['waste_vcores']:g} vcores ({yarn['shapes']} shape(s))")
    u = s["utilisation"]
    print(f"{'utilisation:':<14}cpu {u['cpu']:g}%, ram {u['ram_mb']:g}% (instances / requested)")
    _print_chaining(chaining)
    return 0


def _print_chaining(chaining: ChainPlan) -> None:
    """Each chain (one process a task index) and each edge: chained, or why not."""
    print()
    print(f"{'chains:':<14}" + ("; ".join(" -> ".join(chain) for chain in chaining.chains) or "none"))
    if chaining.edges:
        rows = [(f"{e.up} -> {e.down}", "chained" if e.chained else f"not chained: {e.reason}")
                for e in chaining.edges]
        print(format_table(["edge", "chaining"], rows))


def _compare(args: argparse.Namespace, topology: "Topology", base: "Config") -> int:
    config = topology_config(topology.plan, base)
    results = []
    for granularity in GRANULARITIES:
        for algorithm in ALGORITHMS:
            entry: dict = {"algorithm": algorithm, "granularity": granularity}
            try:
                plan = pack(topology.plan, base, algorithm, granularity)
            except PackingError as e:
                entry.update(feasible=False, reason=str(e))
            else:
                entry.update(feasible=True, **plan_summary(plan, config))
            results.append(entry)
    if args.json:
        print_json({"topology": topology.name, "compare": results})
        return 0
    rows = []
    for e in results:
        if not e["feasible"]:
            rows.append((e["algorithm"], e["granularity"], "-", "-", "-", "-", "-", f"infeasible: {e['reason']}"))
            continue
        yarn = e["yarn"]
        waste = "n/a" if "error" in yarn else f"{yarn['waste_mb']} MB/{yarn['waste_vcores']:g} vc"
        rows.append((
            e["algorithm"], e["granularity"], e["containers"], e["requested"]["cpu"], e["requested"]["ram_mb"],
            waste, f"{e['utilisation']['cpu']:g}/{e['utilisation']['ram_mb']:g}", "",
        ))
    print(f"topology {topology.name!r}: every algorithm x granularity")
    print(format_table(
        ["algorithm", "granularity", "containers", "cpu", "ram_mb", "yarn waste", "util% cpu/ram", "note"],
        rows, right={"containers", "cpu", "ram_mb"},
    ))
    return 0
