"""A topology's shipped files in the UI and the REST API (docs/debugging.md, "Shipped files"): the versions
in force, as ``squall show`` lists them, and a new version of one, as ``squall update --files`` ships it (the
token); the page ``/topology/{name}/files`` lists them with an upload per alias (``static/files.js``).

``PUT /api/v1/topologies/{name}/files/{alias}?filename=NAME[&dry_run=true]`` takes the file's bytes as
the request body (``application/octet-stream``: ``curl -T table.txt -H "Content-Type: ..."``); the file
keeps ``filename`` as its name (default: the alias).
"""
from __future__ import annotations

import os
import tempfile
from typing import Any, Optional

from fastapi import APIRouter, Body, Request
from fastapi.responses import HTMLResponse

from squall.scheduler import manager, shipped_files
from squall.state import Kind
from squall.ui.api import check_token
from squall.ui.context import UiContext
from squall.ui.metrics import BadRequest
from squall.ui.pages import TEMPLATES, root_of


def router(ctx: UiContext) -> APIRouter:
    """The REST API's routes and the page ``/topology/{name}/files`` (its list and an upload per alias)."""
    api = APIRouter()

    @api.get("/topology/{name}/files", response_class=HTMLResponse, include_in_schema=False)
    def files_page(request: Request, name: str) -> Any:
        manager.running(ctx.state, name)
        return TEMPLATES.TemplateResponse(request, "files.html", {
            "root": root_of(request.url.path), "refresh": None, "name": name,
            "files": shipped_files.shown(ctx.state.get(Kind.FILES, name))})

    @api.get("/api/v1/topologies/{name}/files", summary="the shipped files' versions in force")
    def files_get(name: str) -> Any:
        manager.running(ctx.state, name)
        return {"topology": name, "files": shipped_files.shown(ctx.state.get(Kind.FILES, name))}

    @api.put("/api/v1/topologies/{name}/files/{alias}", summary="a new version of a shipped file: the body's bytes (token)")
    def files_put(name: str, alias: str, request: Request, filename: Optional[str] = None, dry_run: bool = False,
                  data: bytes = Body(..., media_type="application/octet-stream")) -> Any:
        check_token(ctx, request)
        filename = filename or alias
        if not shipped_files.ALIAS.fullmatch(filename):
            raise BadRequest(f"filename {filename!r}: use letters, digits, '_', '.' and '-', starting with a letter "
                             "or digit")
        with tempfile.TemporaryDirectory(prefix="squall-upload-") as folder:
            path = os.path.join(folder, filename)
            with open(path, "wb") as f:
                f.write(data)
            upload = shipped_files.LocalFile(path, alias, len(data), f"upload {filename!r} as {alias!r}")
            entries = manager.update_files(ctx.state, name, [upload], dry_run)
        return {"topology": name, "files": [shipped_files.as_json(e) for e in entries], "dry_run": dry_run,
                "message": shipped_files.shipped_line(name, dry_run)}

    return api
