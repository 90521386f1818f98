"""The UI's ASGI application: the REST API, the pages, the static files, and how errors are answered.

A user's error is a 4xx with one line (the CLI's): an unknown topology,
component or process 404, a bad parameter 400, a missing or wrong token
401/403; the state manager or a container's debug server out of reach is 503. The API answers JSON
(``{"error": ...}``), the pages an HTML page with the same line.
"""
from __future__ import annotations

import logging
import os

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

from squall import __version__
from squall.errors import SquallError
from squall.scheduler.inspection import DebugServerUnreachable
from squall.scheduler.manager import NotRunning
from squall.state import StateError
from squall.ui import api, debug_files, debug_inspect, debug_levels, pages
from squall.ui.context import UiContext
from squall.ui.metrics import BadRequest
from squall.ui.views import NotFound

log = logging.getLogger(__name__)
STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")


def status_of(error: Exception) -> int:
    if isinstance(error, api.Unauthorized):
        return error.status
    if isinstance(error, (NotRunning, NotFound)):
        return 404
    if isinstance(error, (StateError, DebugServerUnreachable)):
        return 503
    return 400  # BadRequest, and every other SquallError: the user's (a bad parallelism, a locked topology)


def make_app(ctx: UiContext) -> FastAPI:
    app = FastAPI(title="Squall", version=__version__, docs_url="/api/docs", redoc_url=None,
                  openapi_url="/api/openapi.json",
                  description="See and steer Squall topologies (docs/ui.md). Actions need "
                              "`Authorization: Bearer <token>`.")

    async def answer(request: Request, error: Exception) -> JSONResponse:
        status = status_of(error)
        if request.url.path.startswith("/api/"):
            headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
            return JSONResponse({"error": str(error)}, status_code=status, headers=headers)
        return pages.TEMPLATES.TemplateResponse(request, "error.html", {
            "root": pages.root_of(request.url.path), "refresh": None, "status": status, "message": str(error)},
            status_code=status)

    for kind in (SquallError, api.Unauthorized):
        app.add_exception_handler(kind, answer)

    async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:])}: {e['msg']}" for e in error.errors())
        return await answer(request, BadRequest(problems))

    app.add_exception_handler(RequestValidationError, invalid)
    app.include_router(api.router(ctx))
    app.include_router(debug_files.router(ctx))
    app.include_router(pages.router(ctx))
    app.include_router(debug_inspect.router(ctx))
    app.include_router(debug_levels.router(ctx))
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app
