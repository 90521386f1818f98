"""Charts and the DAG as inline SVG, rendered on the server: no script, nothing fetched by the browser.

``line_chart`` draws one line per component over the window's steps;
``dag`` draws the logical plan in columns (each component one column right
of its furthest input), each box coloured from green (0) to red (1) by the
metric the operator chose.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from markupsafe import Markup, escape

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")


def colour(value: Optional[float]) -> str:
    """Green (0) through yellow to red (1); grey for no value."""
    if value is None:
        return "#d9d9d9"
    v = min(max(value, 0.0), 1.0)
    red, green = (int(255 * v * 2), 190) if v < 0.5 else (230, int(190 * (1 - v) * 2))
    return f"#{min(red, 230):02x}{green:02x}50"


def _nice(top: float) -> float:
    """A round axis maximum at or above ``top``."""
    if top <= 0:
        return 1.0
    step = 10 ** len(str(int(top))) / 10 if top >= 1 else 0.1
    while step > top:
        step /= 10
    for m in (1, 2, 2.5, 5, 10):
        if m * step >= top:
            return m * step
    return 10 * step


def _number(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:.3g}M"
    if v >= 1e3:
        return f"{v / 1e3:.3g}k"
    return f"{v:.3g}"


def line_chart(series: dict, title: str, unit: str, start: float, end: float, width: int = 560,
               height: int = 210, marks: Sequence[tuple[float, str]] = ()) -> Markup:
    """``series``: name -> [(time, value or None)]; x from ``start`` to ``end`` (epoch seconds); ``marks``:
    (time, label) drawn as vertical lines (the label is their tooltip)."""
    left, right, top, bottom = 52, 10, 24, 42
    w, h = width - left - right, height - top - bottom
    values = [v for points in series.values() for _, v in points if v is not None]
    ymax = _nice(max(values) * 1.05) if values else 1.0
    span = max(end - start, 1e-9)
    out = [f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}">',
           f'<text x="{left}" y="15" class="chart-title">{escape(title)} ({escape(unit)})</text>']
    for k in range(5):
        y = top + h - h * k / 4
        out.append(f'<line x1="{left}" x2="{left + w}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{left - 4}" y="{y + 4:.1f}" class="axis" text-anchor="end">{_number(ymax * k / 4)}</text>')
    for k in range(4):
        x = left + w * k / 3
        ago = (end - (start + span * k / 3))
        label = f"-{ago / 60:.0f} min" if span > 300 else f"-{ago:.0f} s"
        out.append(f'<text x="{x:.1f}" y="{top + h + 14}" class="axis" text-anchor="middle">{label}</text>')
    if not values:
        out.append(f'<text x="{left + w / 2}" y="{top + h / 2}" class="empty" text-anchor="middle">'
                   'no figures in this window yet</text>')
    for t, label in marks:
        x = left + w * (t - start) / span
        out.append(f'<line class="mark" x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + h}">'
                   f'<title>{escape(label)}</title></line>')
    for i, (name, points) in enumerate(sorted(series.items())):
        xy = [(left + w * (t - start) / span, top + h - h * v / ymax) for t, v in points if v is not None]
        if not xy:
            continue
        colour_ = PALETTE[i % len(PALETTE)]
        coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
        out.append(f'<polyline class="series" data-series="{escape(name)}" fill="none" stroke="{colour_}" '
                   f'stroke-width="2" points="{coords}"/>')
        lx = left + (i % 4) * (w / 4)
        ly = top + h + 28 + 0 * (i // 4)
        out.append(f'<rect x="{lx:.1f}" y="{ly - 8}" width="10" height="10" fill="{colour_}"/>'
                   f'<text x="{lx + 14:.1f}" y="{ly + 1}" class="legend">{escape(name)}</text>')
    out.append("</svg>")
    return Markup("".join(out))


def layers(components: list) -> dict:
    """component -> its column: one right of its furthest input (spouts and cycles' entries: 0)."""
    inputs = {c["name"]: [i["component"] for i in c["inputs"]] for c in components}
    column: dict = {}

    def depth(name: str, seen: frozenset) -> int:
        if name in column:
            return column[name]
        seen = seen | {name}
        ups = [u for u in inputs.get(name, []) if u in inputs and u not in seen]
        d = 1 + max((depth(u, seen) for u in ups), default=-1)
        column[name] = d
        return d

    for c in components:
        depth(c["name"], frozenset())
    return column


def dag(components: list, values: dict, labels: dict, links: dict, chains: Iterable = ()) -> Markup:
    """The logical plan: ``values`` (component -> 0..1 or None) colour the boxes, ``labels`` (component ->
    text) go under each name, ``links`` (component -> URL) make the boxes links; the edges inside
    ``chains`` (lists of component names run in one process) are drawn thick and labelled chained."""
    chained = {(a, b) for chain in chains for a, b in zip(chain, chain[1:])}
    box_w, box_h, gap_x, gap_y, pad = 168, 58, 76, 22, 12
    column = layers(components)
    rows: dict = {}
    place = {}
    for c in sorted(components, key=lambda c: (column[c["name"]], c["name"])):
        col = column[c["name"]]
        row = rows.get(col, 0)
        rows[col] = row + 1
        place[c["name"]] = (pad + col * (box_w + gap_x), pad + row * (box_h + gap_y))
    width = pad * 2 + (max(column.values(), default=0) + 1) * (box_w + gap_x) - gap_x
    height = pad * 2 + max(rows.values(), default=1) * (box_h + gap_y) - gap_y
    out = [f'<svg class="dag" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="topology graph">',
           # the arrowhead's size in pixels, not in stroke widths: a chained edge's would cover its label
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="10" markerHeight="10" '
           'markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>']
    for c in components:
        for i in c["inputs"]:
            if i["component"] not in place:
                continue
            (x1, y1), (x2, y2) = place[i["component"]], place[c["name"]]
            x1, y1, y2 = x1 + box_w, y1 + box_h / 2, y2 + box_h / 2
            mid = (x1 + x2) / 2
            fused = (i["component"], c["name"]) in chained
            label = "chained" if fused else i["grouping"]  # its grouping stays in the edge's title
            out.append(f'<path class="edge{" chained" if fused else ""}" d="M {x1:.0f} {y1:.0f} C {mid:.0f} '
                       f'{y1:.0f}, {mid:.0f} {y2:.0f}, {x2:.0f} {y2:.0f}" fill="none" stroke="#555" '
                       f'stroke-width="{4 if fused else 1.5}" marker-end="url(#arrow)">'
                       f'<title>{escape(i["component"])} -&gt; {escape(c["name"])}: {escape(i["stream"])} '
                       f'({escape(i["grouping"])}{", chained: one process" if fused else ""})</title></path>')
            out.append(f'<text x="{mid:.0f}" y="{(y1 + y2) / 2 - 4:.0f}" class="edge-label" text-anchor="middle">'
                       f'{escape(label)}</text>')
    for c in components:
        x, y = place[c["name"]]
        value = values.get(c["name"])
        node = (f'<g class="node" data-component="{escape(c["name"])}" data-value="'
                f'{"" if value is None else f"{value:.3f}"}">'
                f'<rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" rx="6" fill="{colour(value)}" '
                f'stroke="#333"/><text x="{x + 8}" y="{y + 20}" class="node-name">{escape(c["name"])} '
                f'×{c["parallelism"]}</text><text x="{x + 8}" y="{y + 40}" class="node-label">'
                f'{escape(labels.get(c["name"], ""))}</text></g>')
        link = links.get(c["name"])
        out.append(f'<a href="{escape(link)}">{node}</a>' if link else node)
    out.append("</svg>")
    return Markup("".join(out))


def bar(used: Optional[float], requested: float, label: str) -> Markup:
    """Used against requested, as a bar (over 100%: red)."""
    if used is None or not requested:
        return Markup(f'<div class="bar"><span class="bar-text">{escape(label)}: not measured</span></div>')
    share = used / requested
    cls = "bar-fill over" if share > 1 else "bar-fill"
    return Markup(f'<div class="bar" title="{escape(label)}"><div class="{cls}" style="width:{min(share, 1) * 100:.0f}%">'
                  f'</div><span class="bar-text">{escape(label)}</span></div>')


def nodes_values(components: list, metric: str, window_secs: Optional[float]) -> tuple:
    """(component -> 0..1 colour value, component -> label) of the chosen metric."""
    values, labels = {}, {}
    p99s = [c["metrics"].get("execute_latency_p99_ms") or c["metrics"].get("execute_latency_ms") or 0.0
            for c in components if c.get("metrics")]
    worst = max(p99s, default=0.0) or 1.0
    for c in components:
        m: Any = c.get("metrics")
        if not m:
            values[c["name"]], labels[c["name"]] = None, "no figures yet"
            continue
        if metric == "backpressure":
            secs = m.get("window_secs") or window_secs or 1.0
            v = (m.get("backpressure_ms") or 0.0) / 1000 / secs
            values[c["name"]], labels[c["name"]] = v, f"backpressure {v * 100:.1f}%"
        elif metric == "latency":
            lat = m.get("execute_latency_p99_ms") or m.get("execute_latency_ms")
            values[c["name"]] = None if lat is None else lat / worst
            labels[c["name"]] = "latency -" if lat is None else f"p99 latency {lat:.3g} ms"
        else:
            v = m.get("capacity")
            values[c["name"]] = v
            labels[c["name"]] = "busy -" if v is None else f"busy {v * 100:.0f}%"
    return values, labels
