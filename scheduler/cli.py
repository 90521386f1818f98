"""``squall submit|kill|activate|deactivate|restart|update|list|show|logs|clean``."""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import signal
import sys
import time
from typing import Any, Optional

from squall.chaining import chains
from squall.commandline import (
    add_config_options,
    add_config_path_option,
    add_json_option,
    format_table,
    load_topology,
    print_json,
)
from squall.conf import base_config
from squall.errors import SquallError
from squall.idl import schema
from squall.logical import process_tasks
from squall.packing import plan_to_json
from squall.scheduler import actions, changes, from_report, launcher, manager
from squall.scheduler.base import LaunchOptions
from squall.state import Kind, StateManager, make_state_manager, member, open_state_manager
from squall.state.status import topology_health
from squall.topology import valid_name


def register(sub: Any) -> None:
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

    p = sub.add_parser("update", help="change a running topology's parallelism and instance resources",
                       description="Repack a running topology for new parallelism and resources, moving as "
                                   "little as possible (containers are added or removed as the caps require), "
                                   "and start and stop only the difference. Prints the new plan and its "
                                   "difference first; --dry-run stops there.")
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
    _state_options(p)
    p.set_defaults(func=with_state(cmd_logs))


def _state_options(parser: argparse.ArgumentParser) -> None:
    add_config_path_option(parser)


def with_state(command: Any) -> Any:
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
    topology, base = load_topology(args)
    plan = topology.plan
    if args.name:
        if not valid_name(args.name):
            raise SquallError(f"--name {args.name!r}: use letters, digits, '_', '.' and '-', starting with a letter or digit")
        plan.name = args.name
    if args.dry_run:
        sys.stdout.write(launcher.dry_run(plan, base, args.cluster))
        return 0
    options = LaunchOptions(spec_out=os.path.abspath(args.spec_out) if args.spec_out else None)
    state = make_state_manager(base)
    state.start()
    # SIGTERM cleans up like Ctrl-C: submit kills what it started and removes the state
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        execution = launcher.submit(plan, state, base, cluster=args.cluster, progress=_progress_printer(),
                                    options=options)
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


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _progress_printer() -> Any:
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
def list_data(state: StateManager) -> list:
    """One row per running topology: ``squall list``'s (and the UI's)."""
    rows = []
    for name in state.names(Kind.EXECUTION_STATE):
        execution = state.get(Kind.EXECUTION_STATE, name)
        plan = state.get(Kind.PACKING_PLAN, name)
        if execution is None or plan is None:
            continue
        health = topology_health(state, name, execution)
        rows.append({
            "name": name,
            "status": health.status,
            "cluster": execution.cluster,
            "containers": len(plan.containers),
            "instances": sum(len(c.instances) for c in plan.containers),
            "run_id": execution.run_id,
            "uptime_secs": round(time.time() - execution.submit_time, 1),
        })
        rows[-1]["reason"] = health.reasons[0].splitlines()[0] if health.reasons else ""
        rows[-1]["reasons"] = list(health.reasons)
    return rows


def cmd_list(args: argparse.Namespace, state: StateManager) -> int:
    rows = list_data(state)
    if args.json:
        print_json(rows)
    elif not rows:
        print("no topology is running")
    else:
        headers = [k for k in rows[0] if k != "reasons"]  # the first line of the first one is "reason"
        print(format_table(headers, [[r[k] for k in headers] for r in rows],
                           right={"containers", "instances", "uptime_secs"}))
    return 0


STATUS_NAMES = {schema.TopologyStatus.RUNNING: "RUNNING", schema.TopologyStatus.PAUSED: "PAUSED"}


def show_data(state: StateManager, name: str, errors: bool = True) -> dict:
    """``squall show``'s data; ``errors``: ask the topology master for the errors raised in user code."""
    execution = manager.running(state, name)
    health = topology_health(state, name, execution)
    plan = state.get(Kind.PACKING_PLAN, name)
    physical = state.get(Kind.PHYSICAL_PLAN, name)
    location = state.get(Kind.SCHEDULER, name)
    leader = state.get(Kind.TMASTER, name)
    ports = {}
    if physical is not None:
        ports = {(s.container, "stmgr"): s.data_port for s in physical.stmgrs}
    index = {i.id.task_id: i.id for c in plan.containers for i in c.instances}
    chain_list = chains(state.get(Kind.TOPOLOGY, name))
    processes = []
    if location is not None and location.supervisor_pid:
        processes.append({"container": None, "process": "supervisor", "host": location.host, "port": None,
                          "pid": location.supervisor_pid, "state": "up", "restarts": 0})
    for m in state.members(Kind.CONTAINER, name):
        record = state.get(Kind.CONTAINER, member(name, m))
        if record is None:
            continue
        executor = f"executor (YARN {record.yarn_container})" if record.yarn_container else "executor"
        processes.append({"container": record.container, "process": executor, "host": record.host, "port": None,
                          "pid": record.executor_pid, "state": "up", "restarts": 0})
        for p in record.processes:
            what = p.name
            runs = [index[t] for t, _ in process_tasks(p.name) if t in index]
            if len(runs) > 1:
                what = "chain " + " -> ".join(f"{i.component}[{i.component_index}] task {i.task_id}" for i in runs)
            elif runs:
                what = f"instance {runs[0].component}[{runs[0].component_index}] task {runs[0].task_id}"
            port = ports.get((record.container, p.name))
            if leader is not None and p.pid == leader.pid:
                what, port = f"{p.name} (leader)", leader.control_port
            processes.append({"container": record.container, "process": what, "host": record.host, "port": port,
                              "pid": p.pid or None, "restarts": p.restarts,
                              "state": "failed" if p.failure else ("up" if p.pid else "restarting")})
    return {
        "name": name,
        "status": health.status,
        "reasons": list(health.reasons),
        "desired_status": STATUS_NAMES[execution.status],
        "confirmed_status": STATUS_NAMES[physical.status] if physical else None,
        "run_dir": execution.run_dir,
        "cluster": execution.cluster,
        "scheduler": launcher.make_scheduler(execution.cluster, state).details(execution),
        "packing_plan": plan_to_json(name, plan),
        "chains": [list(chain) for chain in chain_list],
        "processes": processes,
        "errors": user_errors(state, name) if errors else None,
    }


def user_errors(state: StateManager, name: str) -> Optional[list]:
    """The last errors raised in the topology's user code (each task's, oldest first), as its topology master
    keeps them; None when the master cannot be asked. Through the runtime's client, as ``squall metrics``."""
    from squall.runtime.client import TMasterUnreachable, query_metrics

    try:
        metrics = query_metrics(state, name, timeout=2.0)
    except TMasterUnreachable:
        return None
    found = [{"component": m["component"], "task": task, **e} for task, m in metrics["tasks"].items()
             for e in m["errors"]]
    return sorted(found, key=lambda e: e["time"])


def cmd_show(args: argparse.Namespace, state: StateManager) -> int:
    data = show_data(state, args.name)
    if args.json:
        print_json(data)
        return 0
    print(f"topology {data['name']!r}: {data['status']}  (run folder {data['run_dir']})")
    for reason in data["reasons"]:
        print("  " + reason.replace("\n", "\n    "))
    for label, value in data["scheduler"].items():
        print(f"  {label}: {value}")
    if data["chains"]:
        print("  chains (one process per task of each): " + "; ".join(" -> ".join(c) for c in data["chains"]))
    plan = data["packing_plan"]
    print(f"\npacking plan ({plan['algorithm']}, {plan['granularity']} granularity)")
    rows = []
    for c in plan["containers"]:
        counts: dict = {}
        for i in c["instances"]:
            counts[i["component"]] = counts.get(i["component"], 0) + 1
        r = c["resources"]
        rows.append((c["id"], r["cpu"], r["ram_mb"], r["disk_mb"], ", ".join(f"{k} x{v}" for k, v in counts.items())))
    print(format_table(["container", "cpu", "ram_mb", "disk_mb", "instances"], rows, right={"container", "cpu", "ram_mb", "disk_mb"}))
    print("\nprocesses")
    print(format_table(
        ["container", "process", "host", "port", "pid", "state", "restarts"],
        [["-" if p["container"] is None else p["container"], p["process"], p["host"], p["port"] or "-",
          p["pid"] or "-", p["state"], p["restarts"]] for p in data["processes"]],
        right={"container", "pid", "restarts"},
    ))
    errors = data["errors"]
    if errors is None:
        print("\nerrors in user code: unknown (its topology master did not answer)")
    elif errors:
        print(f"\nerrors in user code (the last {min(len(errors), SHOWN_ERRORS)} of {len(errors)} kept)")
        print(format_table(["time", "component", "task", "where", "error"], [
            [time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["time"])), e["component"], e["task"], e["where"],
             e["error"].splitlines()[-1]] for e in errors[-SHOWN_ERRORS:]], right={"task"}))
    return 0


SHOWN_ERRORS = 10


def cmd_logs(args: argparse.Namespace, state: StateManager) -> int:
    execution = state.get(Kind.EXECUTION_STATE, args.name)
    if execution is not None and execution.cluster != "local":
        return _remote_logs(state, execution)
    if execution is not None:
        run_dir = execution.run_dir
    else:
        runs = sorted(glob.glob(os.path.join(launcher.topology_home(args.name), "*", "logs")))
        if not runs:
            raise SquallError(f"topology {args.name!r} is not running and has no logs on disk")
        run_dir = os.path.dirname(runs[-1])
    files = select_logs(run_dir, args.component, args.task)
    application = os.path.join(run_dir, "yarn", "application_id")
    if not files and os.path.isfile(application):
        with open(application) as f:
            app_id = f.read().strip()
        raise SquallError(f"topology {args.name!r} ran on YARN as {app_id}; its logs are YARN's: "
                          f"yarn logs -applicationId {app_id}")
    if not files:
        what = " ".join(filter(None, [args.component and f"component {args.component!r}",
                                      args.task is not None and f"task {args.task}"]))
        raise SquallError(f"no log in {run_dir}/logs matches {what or 'anything'}")
    offsets = {}
    for path in files:
        with open(path, errors="replace") as f:
            text = f.read()
            offsets[path] = f.tell()
        print(f"==> {path} <==")
        sys.stdout.write(text)
    while args.follow:
        time.sleep(0.5)
        for path in files:
            with open(path, errors="replace") as f:
                f.seek(offsets[path])
                text = f.read()
                offsets[path] = f.tell()
            if text:
                print(f"==> {path} <==")
                sys.stdout.write(text)
                sys.stdout.flush()
    return 0


def _remote_logs(state: StateManager, execution: Any) -> int:
    """Where each container's logs are when its containers run on other hosts (YARN)."""
    name = execution.topology_name
    rows = []
    for m in state.members(Kind.CONTAINER, name):
        record = state.get(Kind.CONTAINER, member(name, m))
        if record is None:
            continue
        folders = sorted({os.path.dirname(p.log_file) for p in record.processes}) or ["-"]
        rows.append([record.container, record.yarn_container or "-", record.host, ", ".join(folders)])
    print(format_table(["container", "yarn container", "host", "log folder"], sorted(rows), right={"container"}))
    for label, value in launcher.make_scheduler(execution.cluster, state).details(execution).items():
        print(f"{label}: {value}")
    return 0


def select_logs(run_dir: str, component: Any = None, task: Any = None) -> list:
    """Log files of the run; instance logs are named after their process (``instance-<task>-<component>.log``,
    a chain's ``instance-<task>-<component>+<task>-<component>....log``): a chained task's lines are in
    its chain's log, each naming its component."""
    files = sorted(glob.glob(os.path.join(run_dir, "logs", "container-*", "*.log")))
    if component is None and task is None:
        return files
    return [path for path in files
            if any((component is None or c == component) and (task is None or t == task)
                   for t, c in process_tasks(os.path.basename(path)[: -len(".log")]))]
