"""``squall cluster``, ``squall rebalance`` and ``squall yarn package-env``."""
from __future__ import annotations

import argparse
from typing import Protocol

from squall.commandline import add_config_path_option, add_json_option, format_table, print_json
from squall.conf import base_config
from squall.errors import SquallError
from squall.state import Kind, StateManager, member, open_state_manager
from squall.yarn.view import squall_containers, view_json


class SubParsers(Protocol):
    """What ``register`` is given: ``ArgumentParser.add_subparsers()``'s result."""

    def add_parser(self, name: str, **kwargs: object) -> argparse.ArgumentParser: ...


def register(sub: SubParsers) -> None:
    p = sub.add_parser("cluster", help="the YARN cluster: nodes, who uses them, resource pools, queues")
    add_config_path_option(p)
    add_json_option(p)
    p.set_defaults(func=cmd_cluster)

    p = sub.add_parser("rebalance", help="move a YARN topology's containers off nodes whose pool went negative")
    p.add_argument("name", help="topology name")
    p.add_argument("--dry-run", action="store_true", help="print the moves, make none")
    add_config_path_option(p)
    p.set_defaults(func=cmd_rebalance)

    p = sub.add_parser("yarn", help="YARN helpers")
    yarn_sub = p.add_subparsers(dest="yarn_command", metavar="SUBCOMMAND")
    yarn_sub.required = True
    pe = yarn_sub.add_parser("package-env", help="pack a small Python environment for YARN containers")
    pe.add_argument("out", help="the archive to write (.tar.gz)")
    pe.add_argument("--python", help="interpreter to build it with (default: this one); the nodes need it too")
    pe.set_defaults(func=cmd_package_env)


def _view(args: argparse.Namespace, state: StateManager, only: str = "") -> tuple:
    from squall.yarn.client import rm_client
    from squall.yarn.view import fetch_view

    config = base_config(args.config_path)
    rm = rm_client(config)
    if rm is None:
        raise SquallError("no ResourceManager address: set squall.yarn.rm.url in the cluster config, or "
                          "HADOOP_CONF_DIR to the cluster's Hadoop configuration")
    containers = squall_containers(state, only)
    return fetch_view(rm, containers, config), containers


def cmd_cluster(args: argparse.Namespace) -> int:
    with open_state_manager(args.config_path) as state:
        view, _ = _view(args, state)
    data = view_json(view)
    nodes, owners, queues = data["nodes"], data["allocated_by"], data["queues"]
    if args.json:
        print_json(data)
        return 0

    def pair(d: dict) -> str:
        return "-" if d["vcores"] is None else f"{d['vcores']:g}/{d['mb']:g}"
    print("nodes (vcores/MB)")
    print(format_table(["host", "capacity", "allocated", "squall", "others", "measured", "pool", "state"],
                       [[n["host"], pair(n["capacity"]), pair(n["allocated"]), pair(n["squall"]), pair(n["others"]),
                         pair(n["measured"]), pair(n["pool"]), n["state"]] for n in nodes]))
    print("\nallocated by (vcores/MB): " + ", ".join(f"{o} {pair(a)}" for o, a in owners.items()))
    print("\nqueues")
    print(format_table(["queue", "capacity %", "absolute %", "max %", "used %", "used MB", "used vcores"],
                       [[q["queue"], f"{q['capacity_pct']:g}", f"{q['absolute_capacity_pct']:g}",
                         f"{q['max_capacity_pct']:g}", f"{q['used_pct']:.1f}", q["used_mb"], q["used_vcores"]]
                        for q in queues], right={"used MB", "used vcores"}))
    return 0


def cmd_rebalance(args: argparse.Namespace) -> int:
    from squall.scheduler import manager
    from squall.state.status import topology_health
    from squall.yarn.view import moves

    with open_state_manager(args.config_path) as state:
        execution = manager.running(state, args.name)
        if execution.cluster != "yarn":
            raise SquallError(f"topology {args.name!r} runs on the {execution.cluster} cluster; rebalance moves "
                              "YARN containers")
        view, containers = _view(args, state, args.name)
        todo = moves(view, containers)
        if not todo:
            print(f"no container of {args.name!r} is on a node whose pool is negative")
            return 0
        for c in todo:
            print(f"container {c.container} on {c.host}: the node's pool is negative"
                  + ("" if not args.dry_run else " (would move)"))
        if args.dry_run:
            return 0
        for c in todo:  # one at a time, each back up before the next: never below the running parallelism
            health = topology_health(state, args.name)
            if not health.up:
                raise SquallError(f"topology {args.name!r} is {health.status}; not moving container {c.container} "
                                  f"({'; '.join(health.reasons)})")
            manager.restart(state, args.name, c.container)
            record = state.get(Kind.CONTAINER, member(args.name, c.container))
            where = record.host if record is not None else "?"
            note = " (YARN placed it on the same node again)" if where == c.host else ""
            print(f"moved container {c.container}: {c.host} -> {where}{note}")
    return 0


def cmd_package_env(args: argparse.Namespace) -> int:
    import sys

    from squall.yarn.environment import package_env

    size = package_env(args.out, python=args.python or sys.executable)
    print(f"wrote {args.out}: {size / 1e6:.1f} MB; ship it with squall.yarn.environment: {args.out}")
    return 0
