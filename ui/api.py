"""The REST API under ``/api/v1``: Storm's paths where Storm has the concept (docs/ui.md).

Reads need nothing; actions (``POST /api/v1/topology/{name}/{action}``)
need the UI's token as ``Authorization: Bearer <token>``: without it 401,
with another 403, and nothing changes. Actions run the CLI's own functions
(``scheduler/actions.py``), so they refuse and report in the CLI's words: a
user error is 4xx with ``{"error": "<the CLI's line>"}``.
"""
from __future__ import annotations

import hmac
from typing import Any, Optional

from fastapi import APIRouter, Body, Request
from fastapi.responses import JSONResponse

from squall.health import view as health
from squall.scheduler import actions, changes, from_report, manager
from squall.ui import capacity, cluster, views
from squall.ui.context import UiContext
from squall.ui.metrics import BadRequest, parse_window

ACTIONS = ("activate", "deactivate", "restart", "update", "kill")


class Unauthorized(Exception):
    """No token, or not the UI's (401 without one, 403 with another)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def check_token(ctx: UiContext, request: Request) -> None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if not header:
        raise Unauthorized("this action needs the UI's token: send Authorization: Bearer <token> "
                           "(squall.ui.token, or the token squall ui printed)", 401)
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), ctx.token.encode()):
        raise Unauthorized("wrong token: this is not the UI's token (squall.ui.token, or the token squall ui "
                           "printed)", 403)


def router(ctx: UiContext) -> APIRouter:
    api = APIRouter(prefix="/api/v1")

    @api.get("/cluster/summary", summary="Topologies, containers, hosts; on YARN the cluster view")
    def cluster_summary() -> Any:
        return cluster.cluster(ctx.state, ctx.config)

    @api.get("/topology/summary", summary="Every running topology: status with its reasons, uptime, size")
    def topology_summary() -> Any:
        return {"topologies": views.topologies(ctx.state)}

    @api.get("/topology/{name}", summary="Logical plan, config, status, per-component figures over ?window=")
    def topology(name: str, window: Optional[str] = None) -> Any:
        return views.topology(ctx.state, ctx.metrics, name, parse_window(window))

    @api.get("/topology/{name}/component/{component}", summary="Every instance's figures over ?window=")
    def component(name: str, component: str, window: Optional[str] = None) -> Any:
        return views.component(ctx.state, ctx.metrics, name, component, parse_window(window))

    @api.get("/topology/{name}/packing", summary="Packing plan, requested vs used resources, physical plan: "
                                                  "?page= of 50 containers")
    def packing(name: str, page: int = 1) -> Any:
        return views.packing(ctx.state, ctx.metrics, name, page)

    @api.get("/topology/{name}/capacity", summary="The latest capacity report and the dry run of applying it")
    def capacity_report(name: str) -> Any:
        return capacity.capacity(ctx.state, name, ctx.config, ctx.reports_dir)

    @api.get("/topology/{name}/logs", summary="The processes whose logs can be read")
    def log_index(name: str) -> Any:
        return {"topology": name, "logs": views.log_index(ctx.state, name)}

    @api.get("/topology/{name}/logs/{container}/{process}", summary="A window of a process's log (bounded)")
    def logs(name: str, container: int, process: str, offset: Optional[int] = None,
             length: Optional[int] = None) -> Any:
        return views.log_window(ctx.state, name, container, process, offset, length)

    @api.get("/topologies/{name}/health", summary="The health manager: mode, symptoms, pending recommendation, "
                                                  "decisions with their evidence (squall health --json)")
    def health_get(name: str) -> Any:
        return health.health_view(ctx.state, name)

    @api.post("/topologies/{name}/health/{change}", summary='mode ({"mode": "auto"}) or apply '
                                                            '({"decision": ID}, optional) (token)')
    def health_post(name: str, change: str, request: Request, body: Optional[dict] = Body(default=None)) -> Any:
        check_token(ctx, request)
        body = body or {}
        if change == "mode":
            mode = body.get("mode")
            if not isinstance(mode, str):
                raise BadRequest(f'mode: give {{"mode": "off" | "recommend" | "auto"}}, got {mode!r}')
            control = health.set_mode(ctx.state, name, mode)
            return {"topology": name, "mode": control.mode,
                    "message": f"health manager mode {control.mode} (from its next round)"}
        if change == "apply":
            decision_id = body.get("decision")
            if decision_id is not None and not isinstance(decision_id, str):
                raise BadRequest(f"apply: decision {decision_id!r} is not a decision id")
            decision = health.request_apply(ctx.state, name, decision_id)
            return {"topology": name, "decision": decision.id,
                    "message": f"{decision.id} will be applied at the next round: {decision.summary}"}
        return JSONResponse({"error": f"unknown health change {change!r} (mode, apply)"}, 404)

    @api.post("/topology/{name}/{action}", summary="activate, deactivate, restart, update or kill (token)")
    def act(name: str, action: str, request: Request, body: Optional[dict] = Body(default=None)) -> Any:
        check_token(ctx, request)
        if action not in ACTIONS:
            return JSONResponse({"error": f"unknown action {action!r} (actions: {', '.join(ACTIONS)})"}, 404)
        body = body or {}
        if action == "update":
            return _update(ctx, name, body)
        if action == "restart":
            container = body.get("container")
            if container is not None and (isinstance(container, bool) or not isinstance(container, int)):
                raise BadRequest(f"restart: container {container!r} is not a container id")
            message = actions.restart(ctx.state, name, container)
        else:
            message = getattr(actions, action)(ctx.state, name)
        ctx.metrics.forget(name)
        return {"topology": name, "action": action, "message": message}

    return api


def _update(ctx: UiContext, name: str, body: dict) -> Any:
    """``squall update NAME --component-parallelism C=N... | --from-report DIR [--dry-run]``."""
    report, parallelism = body.get("report"), body.get("parallelism")
    if bool(report) == bool(parallelism):
        raise BadRequest('update: give either "parallelism": {"COMPONENT": N} or "report": "<report folder>"')
    if report:
        change = from_report.read_update(capacity.report_path(ctx.reports_dir, str(report)), name)
    elif isinstance(parallelism, dict):
        change = changes.TopologyUpdate(parallelism=actions.parallelism_of(parallelism))
    else:
        raise BadRequest(f'update: "parallelism" must be {{"COMPONENT": N, ...}}, got {parallelism!r}')
    dry_run = bool(body.get("dry_run"))
    planned = manager.plan(ctx.state, name, change, ctx.config)
    lines = changes.describe(planned)
    outcome = actions.update(ctx.state, name, change, ctx.config, planned, dry_run)
    ctx.metrics.forget(name)
    return {"topology": name, "action": "update", "message": outcome.line, "lines": lines + [outcome.line],
            "dry_run": dry_run, "applied": outcome.applied, "diff": changes.diff_json(outcome.planned)}
