"""Debugging a running topology from the UI and the REST API: log levels, tuple sampling and the events
page (docs/debugging.md). Changes need the UI's token, as every action does (``api.check_token``); they
run the CLI's own functions (``scheduler/debugging.py``), so they refuse in its words.

| method | path | what |
| --- | --- | --- |
| GET | ``/api/v1/topologies/{name}/debug`` | the levels and sampling in force, with when each reverts |
| POST | ``/api/v1/topologies/{name}/debug/levels`` | ``{"levels": ["root=DEBUG:30"], "reset": [LOGGER], "component": C}`` |
| POST | ``/api/v1/topologies/{name}/debug/sampling`` | ``{"percent": P, "component": C, "seconds": S}`` or ``{"off": true}`` |
| GET | ``/api/v1/topologies/{name}/events`` | the sampled emits, newest ``?limit=`` (100), of ``?component=`` |
| page | ``/topology/{name}/events`` | the events with a filter, and sampling's controls |
"""
from __future__ import annotations

from typing import Any, Optional

from fastapi import APIRouter, Body, Request
from fastapi.responses import HTMLResponse

from squall.debugging import LEVELS
from squall.scheduler import debugging, events
from squall.ui.api import check_token
from squall.ui.context import UiContext
from squall.ui.metrics import BadRequest
from squall.ui.pages import TEMPLATES, root_of

EVENTS_SHOWN = 100  # events a page or a request gives unless asked for another number
MAX_EVENTS = 10_000


def router(ctx: UiContext) -> APIRouter:
    routes = APIRouter()
    TEMPLATES.env.globals["log_levels"] = LEVELS  # the topology page's form (debug_levels.html)

    @routes.get("/api/v1/topologies/{name}/debug", summary="Log levels and sampling in force, and when each reverts")
    def debug_get(name: str) -> Any:
        debugging.components_of(ctx.state, name)  # 404 for a topology that is not running
        return {"topology": name, **debugging.debug_view(ctx.state, name)}

    @routes.post("/api/v1/topologies/{name}/debug/levels",
                 summary='Set levels ({"levels": ["root=DEBUG:30"], "component": C}) or reset them '
                         '({"reset": ["root"]}) (token)')
    def levels_post(name: str, request: Request, body: Optional[dict] = Body(default=None)) -> Any:
        check_token(ctx, request)
        body = body or {}
        levels, reset = _strings(body, "levels"), _strings(body, "reset")
        debugging.set_log_levels(ctx.state, name, levels, reset, _component(body))
        return {"topology": name, **debugging.debug_view(ctx.state, name),
                "message": "log levels in force within 2 s: " + ("; ".join(levels + [f"reset {r}" for r in reset]))}

    @routes.post("/api/v1/topologies/{name}/debug/sampling",
                 summary='Sample ({"percent": P, "component": C, "seconds": S}) or stop ({"off": true}) (token)')
    def sampling_post(name: str, request: Request, body: Optional[dict] = Body(default=None)) -> Any:
        check_token(ctx, request)
        body = body or {}
        off = body.get("off", False)
        if not isinstance(off, bool):
            raise BadRequest(f'"off" must be true or false, got {off!r}')
        component = _component(body)
        debugging.set_sampling(ctx.state, name, body.get("percent"), component, body.get("seconds"), off)
        what = f"component {component}" if component else "every component"
        message = f"sampling of {what} off" if off else f"sampling {body['percent']}% of the emits of {what}"
        return {"topology": name, **debugging.debug_view(ctx.state, name), "message": message}

    @routes.get("/api/v1/topologies/{name}/events", summary="Sampled emits, newest ?limit= of ?component=")
    def events_get(name: str, component: Optional[str] = None, limit: int = EVENTS_SHOWN) -> Any:
        return {"topology": name, "component": component, "events": _events(ctx, name, component, limit)}

    @routes.get("/topology/{name}/events", response_class=HTMLResponse, include_in_schema=False)
    def events_page(request: Request, name: str, component: Optional[str] = None, limit: int = EVENTS_SHOWN) -> Any:
        found = _events(ctx, name, component or None, limit)
        return TEMPLATES.TemplateResponse(request, "events.html", {
            "root": root_of(request.url.path), "refresh": None, "name": name, "component": component or "",
            "limit": limit, "events": list(reversed(found)), "components": debugging.components_of(ctx.state, name),
            "debug": debugging.debug_view(ctx.state, name)})

    return routes


def _events(ctx: UiContext, name: str, component: Optional[str], limit: int) -> list:
    if not 1 <= limit <= MAX_EVENTS:
        raise BadRequest(f"limit {limit}: expected 1 to {MAX_EVENTS}")
    if component is not None:
        debugging.check_component(ctx.state, name, component)
    else:
        debugging.components_of(ctx.state, name)
    return events.read_events(ctx.state, name, component, limit)


def _strings(body: dict, key: str) -> list[str]:
    value = body.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRequest(f'"{key}" must be a list of strings, got {value!r}')
    return value


def _component(body: dict) -> Optional[str]:
    component = body.get("component") or None
    if component is not None and not isinstance(component, str):
        raise BadRequest(f'"component" must be a component name, got {component!r}')
    return component
