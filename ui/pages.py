"""The pages: server-rendered from the same data as the REST API (``views``), with inline SVG charts.

Every link is relative (``root`` leads back to the UI's top), so the pages
work at ``/`` and below a proxy's prefix alike (YARN's web proxy and Skein's
page routes). The little JavaScript there is (``static/ui.js``) keeps the
token and posts the actions to the REST API.
"""
from __future__ import annotations

import os
import time
from typing import Any, Optional
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from squall.health.model import MODES
from squall.ui import capacity, cluster, health, svg, views
from squall.ui.context import UiContext
from squall.ui.metrics import WINDOWS, parse_window

TEMPLATES = Jinja2Templates(directory=os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates"))
METRICS = {"busy": "busy fraction", "backpressure": "backpressure", "latency": "latency (p99)"}


def root_of(path: str) -> str:
    """The relative way from a page at ``path`` back to the UI's top: ``./``, ``../``, ``../../`` ..."""
    depth = path.count("/") - 1
    return "../" * depth if depth > 0 else "./"


def fmt(value: object, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def ago(seconds: Optional[float]) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    return f"{s // 86400}d {s % 86400 // 3600}h" if s >= 86400 else \
        f"{s // 3600}h {s % 3600 // 60}m" if s >= 3600 else f"{s // 60}m {s % 60}s"


def clock(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


TEMPLATES.env.filters.update(fmt=fmt, ago=ago, clock=clock, q=lambda s: quote(str(s), safe=""))


def router(ctx: UiContext) -> APIRouter:
    pages = APIRouter(include_in_schema=False)

    def render(request: Request, template: str, **data: object) -> HTMLResponse:
        refresh = request.query_params.get("refresh")
        return TEMPLATES.TemplateResponse(request, template, {
            "root": root_of(request.url.path), "refresh": int(refresh) if refresh and refresh.isdigit() else None,
            "windows": list(WINDOWS), **data})

    @pages.get("/", response_class=HTMLResponse)
    def index(request: Request) -> Any:
        return render(request, "index.html", topologies=views.topologies(ctx.state))

    @pages.get("/cluster", response_class=HTMLResponse)
    def cluster_page(request: Request) -> Any:
        return render(request, "cluster.html", cluster=cluster.cluster(ctx.state, ctx.config))

    @pages.get("/topology/{name}", response_class=HTMLResponse)
    def topology(request: Request, name: str, window: Optional[str] = None, metric: str = "busy") -> Any:
        data = views.topology(ctx.state, ctx.metrics, name, parse_window(window))
        metric = metric if metric in METRICS else "busy"
        values, labels = svg.nodes_values(data["components"], metric, WINDOWS[data["window"]])
        root = root_of(request.url.path)
        links = {c["name"]: f"{root}topology/{quote(name)}/component/{quote(c['name'])}?window={data['window']}"
                 for c in data["components"]}
        now = time.time()
        span = WINDOWS[data["window"]] or 3600.0
        kinds = {c["name"]: c["kind"] for c in data["components"]}
        rate = {c: [(p["ts"], (p["emitted"] if kinds.get(c) == "spout" else p["executed"]) / p["secs"])
                    for p in points] for c, points in data["series"].items()}
        latency = {c: [(p["ts"], p["execute_latency_ms"]) for p in points] for c, points in data["series"].items()}
        return render(request, "topology.html", t=data, metric=metric, metrics=METRICS,
                      errors=views.grouped_errors(data["errors"]),
                      dag=svg.dag(data["components"], values, labels, links, data["chains"]),
                      rate_chart=svg.line_chart(rate, "tuples per second (spouts emitted, bolts executed)",
                                                "tuples/s", now - span, now),
                      latency_chart=svg.line_chart(latency, "execute latency, mean per step", "ms", now - span, now))

    @pages.get("/topology/{name}/component/{component}", response_class=HTMLResponse)
    def component(request: Request, name: str, component: str, window: Optional[str] = None) -> Any:
        data = views.component(ctx.state, ctx.metrics, name, component, parse_window(window))
        return render(request, "component.html", c=data, errors=views.grouped_errors(data["errors"]))

    @pages.get("/topology/{name}/packing", response_class=HTMLResponse)
    def packing(request: Request, name: str, page: int = 1) -> Any:
        return render(request, "packing.html", p=views.packing(ctx.state, ctx.metrics, name, page), bar=svg.bar)

    @pages.get("/topology/{name}/capacity", response_class=HTMLResponse)
    def capacity_page(request: Request, name: str) -> Any:
        return render(request, "capacity.html", c=capacity.capacity(ctx.state, name, ctx.config, ctx.reports_dir))

    @pages.get("/topology/{name}/health", response_class=HTMLResponse)
    def health_page(request: Request, name: str, window: Optional[str] = None) -> Any:
        h = health.health_page(ctx.state, ctx.metrics, name, parse_window(window or "10m"))
        return render(request, "health.html", h=h, modes=MODES,
                      symptom_columns=["kind", "parallelism", "execute_rate", "busy_max", "queue_depth_max",
                                       "backpressure_ms", "complete_latency_p99_ms", "source_lag"],
                      rate_chart=svg.line_chart(h["rates"], "tuples per second (spouts emitted, bolts executed)",
                                                "tuples/s", h["start"], h["end"], marks=h["marks"]),
                      parallelism_chart=svg.line_chart(h["parallelism"], "parallelism", "tasks", h["start"],
                                                       h["end"], marks=h["marks"]))

    @pages.get("/topology/{name}/logs", response_class=HTMLResponse)
    def logs(request: Request, name: str, container: Optional[int] = None, process: Optional[str] = None,
             offset: Optional[int] = None) -> Any:
        index = views.log_index(ctx.state, name)
        if container is None or process is None:
            first = next((x for x in index if x["process"].startswith("instance-")), index[0] if index else None)
            container, process = (first["container"], first["process"]) if first else (None, None)
        window = views.log_window(ctx.state, name, container, process, offset, None) if process else None
        return render(request, "logs.html", name=name, index=index, log=window, length=views.LOG_LENGTH)

    return pages
