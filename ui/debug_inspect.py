"""Log search and a look inside tasks, in the UI: the search page (its box, and ``squall logs --grep``'s
results), the profile buttons of a component's instance rows (``static/debug_inspect.js``), the kept
results of every container and their files, through ``scheduler/inspection.py`` (each container's debug
server answers for its own logs and tasks).

REST: ``GET /api/v1/topologies/{name}/logs/search?grep=&component=&since=&limit=``,
``POST /api/v1/topologies/{name}/profile`` ``{"task", "kind": "stacks"|"flame"|"memory", "seconds"}`` (the
UI's token), ``GET /api/v1/topologies/{name}/debug/results`` and ``.../debug/results/{container}/{file}``.
"""
from __future__ import annotations

import os
from typing import Any, Optional

from fastapi import APIRouter, Body, Request
from fastapi.responses import HTMLResponse, Response

from squall.errors import SquallError
from squall.scheduler import inspection, manager
from squall.ui.api import check_token
from squall.ui.context import UiContext
from squall.ui.metrics import BadRequest
from squall.ui.pages import TEMPLATES, root_of

# A kept result is shown as its own document, never with the UI's rights: py-spy's SVGs carry scripts.
SANDBOX = {"Content-Security-Policy": "sandbox allow-scripts", "X-Content-Type-Options": "nosniff"}
SECONDS = {"flame": 5.0, "memory": 5.0}  # when a request does not say


def result_link(name: str, container: int, file_name: str) -> str:
    """The UI-relative path of a kept result (from the UI's top)."""
    return f"api/v1/topologies/{name}/debug/results/{container}/{file_name}"


def router(ctx: UiContext) -> APIRouter:
    r = APIRouter()

    @r.get("/api/v1/topologies/{name}/logs/search", summary="Lines of every container's logs that ?grep= "
                                                            "matches, newest first (squall logs --grep --json)")
    def search(name: str, grep: str, component: Optional[str] = None, since: Optional[str] = None,
               limit: int = inspection.DEFAULT_LIMIT) -> Any:
        return inspection.search_logs(ctx.state, name, grep, component, since or None, limit)

    @r.post("/api/v1/topologies/{name}/profile", summary='Stacks, flame graph or memory of a task: {"task": T, '
                                                         '"kind": "stacks"|"flame"|"memory", "seconds": S} (token)')
    def profile(name: str, request: Request, body: Optional[dict] = Body(default=None)) -> Any:
        check_token(ctx, request)
        body = body or {}
        task, kind = body.get("task"), body.get("kind")
        if isinstance(task, bool) or not isinstance(task, int):
            raise BadRequest(f"profile: task {task!r} is not a task id")
        if kind not in inspection.PROFILE_KINDS:
            raise BadRequest(f"profile: kind {kind!r}: one of {', '.join(inspection.PROFILE_KINDS)}")
        seconds = body.get("seconds", SECONDS.get(kind))
        if kind != "stacks" and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))):
            raise BadRequest(f"profile: seconds {seconds!r} is not a number")
        answer = inspection.profile(ctx.state, name, task, kind, seconds)
        file_name = os.path.basename(answer["path"])
        return {**answer, "link": result_link(name, answer["container"], file_name),
                "message": f"{kind} of task {task} ({answer['process']}) kept as {file_name}"}

    @r.get("/api/v1/topologies/{name}/debug/results", summary="Every container's kept stacks and profiles")
    def results(name: str) -> Any:
        return {"topology": name, "results": [{**x, "link": result_link(name, x["container"], x["name"])}
                                              for x in inspection.results(ctx.state, name)]}

    @r.get("/api/v1/topologies/{name}/debug/results/{container}/{file_name}", summary="A kept result's file")
    def result(name: str, container: int, file_name: str) -> Response:
        data, kind = inspection.result_file(ctx.state, name, container, file_name)
        return Response(data, media_type=kind, headers=SANDBOX)

    def render(request: Request, template: str, **data: object) -> HTMLResponse:
        return TEMPLATES.TemplateResponse(request, template, {"root": root_of(request.url.path), "refresh": None,
                                                              **data})

    @r.get("/topology/{name}/search", response_class=HTMLResponse, include_in_schema=False)
    def search_page(request: Request, name: str, grep: Optional[str] = None, component: Optional[str] = None,
                    since: Optional[str] = None) -> Any:
        manager.running(ctx.state, name)
        found, error = None, None
        if grep:
            try:
                found = inspection.search_logs(ctx.state, name, grep, component or None, since or None)
            except SquallError as e:  # a bad expression, component or time: said above the box
                error = str(e)
        return render(request, "search.html", name=name, grep=grep or "", component=component or "",
                      since=since or "", found=found, error=error,
                      notes=inspection.search_notes(found) if found else [])

    @r.get("/topology/{name}/debug", response_class=HTMLResponse, include_in_schema=False)
    def results_page(request: Request, name: str) -> Any:
        kept = [{**x, "link": result_link(name, x["container"], x["name"])}
                for x in inspection.results(ctx.state, name)]
        return render(request, "debug_results.html", name=name, results=kept)

    return r
