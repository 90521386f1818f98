"""``squall metrics``: ask a running topology's master for its metrics."""
from __future__ import annotations

import argparse
from typing import Protocol

from squall.chaining import chains
from squall.commandline import add_config_path_option, add_json_option, format_table, print_json
from squall.state import Kind, open_state_manager


class Subcommands(Protocol):
    """What ``ArgumentParser.add_subparsers()`` returns, as this module uses it."""

    def add_parser(self, name: str, **kwargs: object) -> argparse.ArgumentParser:
        ...


def register(sub: Subcommands) -> None:
    p = sub.add_parser("metrics", help="per-component counts, rates and latencies of a running topology")
    p.add_argument("name", help="topology name")
    add_config_path_option(p)
    p.add_argument("--tasks", action="store_true", help="also show every task")
    add_json_option(p)
    p.set_defaults(func=cmd_metrics)


def cmd_metrics(args: argparse.Namespace) -> int:
    from squall.runtime.client import query_metrics
    from squall.state.status import topology_health

    with open_state_manager(args.config_path) as state:
        metrics = query_metrics(state, args.name)
        health = topology_health(state, args.name)
        chain_list = [list(chain) for chain in chains(state.get(Kind.TOPOLOGY, args.name))]
    if args.json:
        print_json({**metrics, "chains": chain_list, "status": health.status, "reasons": list(health.reasons)})
        return 0
    print(format_metrics(metrics, tasks=args.tasks))
    if metrics.get("sources"):
        print("\nsource partitions (as each task last reported them):")
        print(format_sources(metrics["sources"]))
    if "checkpoints" in metrics:
        from squall.runtime.checkpoints import describe_checkpoints

        print(describe_checkpoints(metrics["checkpoints"]))
    if chain_list:
        print("chains (one process per task of each; every component's figures are its own): "
              + "; ".join(" -> ".join(chain) for chain in chain_list))
    print(f"\nstatus: {health.status}" + "".join(f"\n  {r.splitlines()[0]}" for r in health.reasons))
    return 0


COLUMNS = ["emitted", "executed", "acked", "failed", "emit_rate", "execute_rate",
           "execute_latency_ms", "process_latency_ms"]


def format_metrics(metrics: dict, tasks: bool = False) -> str:
    """The per-component (and optionally per-task) table of ``query_metrics``."""
    rows = []
    for name, c in sorted(metrics["components"].items()):
        rows.append([name] + [_value(c.get(k)) for k in COLUMNS])
        if tasks:
            for task_id, t in sorted(metrics["tasks"].items(), key=lambda kv: int(kv[0])):
                if t["component"] == name:
                    rows.append([f"  task {task_id}"] + [_value(t.get(k)) for k in COLUMNS])
    return format_table(["component"] + COLUMNS, rows, right=set(COLUMNS))


def format_sources(sources: list) -> str:
    """The table of the partitions source spouts read: lag, records/s, bytes/s."""
    rows = [[p["component"], p["task_id"], p["partition"], _value(p["lag"]), p["records_per_sec"],
             p["bytes_per_sec"]] for p in sources]
    right = {"task", "lag", "records/s", "bytes/s"}
    return format_table(["component", "task", "partition", "lag", "records/s", "bytes/s"], rows, right=right)


def _value(v: object) -> object:
    return "-" if v is None else v
