"""Writing a report: one self-contained HTML file, each table as CSV and JSON, the charts as PNG.

The HTML embeds the charts as base64 PNG data URIs and carries its own CSS:
it opens without a network.
"""
from __future__ import annotations

import base64
import csv
import datetime
import html
import json
import os
from dataclasses import asdict, dataclass, field
from typing import Optional, Sequence


@dataclass
class Table:
    name: str  # file stem: tables/<name>.csv
    title: str
    rows: list
    columns: Optional[list] = None  # default: keys of the first row
    note: str = ""
    key_columns: Optional[list] = None  # what the page shows first; every column stays one click away


    def cols(self) -> list:
        if self.columns:
            return self.columns
        return list(self.rows[0]) if self.rows else []


@dataclass(frozen=True)
class Verdict:
    """What a report says first: the decision (``headline``), what changes and why (``changes``:
    rows of component, now, recommended, why) and what it costs and frees (``costs``: rows of
    resource, now, recommended, change)."""

    headline: str
    changes: list
    costs: list


@dataclass
class Report:
    kind: str  # "capacity" | "packing"
    title: str
    facts: list  # (label, value) pairs shown on top
    tables: list
    charts: list  # (title, png bytes)
    summary: list = field(default_factory=list)  # terminal lines
    data: dict = field(default_factory=dict)  # extra JSON content (parameters)
    verdict: Optional[Verdict] = None


def write_report(report: Report, out_dir: str) -> dict:
    """Write ``report.html``, ``report.json``, ``tables/*.csv|json`` and ``charts/*.png``; return the paths."""
    os.makedirs(os.path.join(out_dir, "tables"), exist_ok=True)
    os.makedirs(os.path.join(out_dir, "charts"), exist_ok=True)
    for table in report.tables:
        _write_csv(table, os.path.join(out_dir, "tables", f"{table.name}.csv"))
        with open(os.path.join(out_dir, "tables", f"{table.name}.json"), "w") as f:
            json.dump(_jsonable(table.rows), f, indent=1)
    for i, (title, png) in enumerate(report.charts, 1):
        with open(os.path.join(out_dir, "charts", f"{i:02d}-{_slug(title)}.png"), "wb") as f:
            f.write(png)
    everything = {
        "kind": report.kind,
        "title": report.title,
        "facts": {k: v for k, v in report.facts},
        **({"verdict": asdict(report.verdict)} if report.verdict else {}),
        **report.data,
        "tables": {t.name: t.rows for t in report.tables},
    }
    json_path = os.path.join(out_dir, "report.json")
    with open(json_path, "w") as f:
        json.dump(_jsonable(everything), f, indent=1)
    html_path = os.path.join(out_dir, "report.html")
    with open(html_path, "w") as f:
        f.write(render_html(report))
    return {"html": html_path, "json": json_path, "tables": os.path.join(out_dir, "tables"),
            "charts": os.path.join(out_dir, "charts")}


def _write_csv(table: Table, path: str) -> None:
    columns = table.cols()
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for row in table.rows:
            writer.writerow([_csv_cell(row.get(c)) for c in columns])


def _csv_cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value)
    return value


def _jsonable(value: object) -> object:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    return value


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-")[:60]


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;color:#222;max-width:1400px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:12px;margin:.5em 0}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:right;white-space:nowrap}
th{background:#f3f3f3;position:sticky;top:0}td.t{text-align:left;white-space:normal}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 1em}dt{font-weight:600}
.note{color:#555;font-size:13px}img{max-width:100%;border:1px solid #eee;margin:.5em 0}
.scroll{overflow-x:auto}
.verdict{border-left:4px solid #2b6cb0;background:#f5f9ff;padding:.6em 1em;margin:1em 0}
.verdict p.headline{font-size:1.1em;margin:.2em 0 .6em}.verdict table{font-size:13px}
.verdict td{white-space:normal}details{margin:.5em 0}summary{cursor:pointer;color:#2b6cb0}
"""


def render_html(report: Report) -> str:
    """The decision first (the verdict), then the tables, each showing its key columns with every column
    one click away, then the charts; the run's facts folded under "About this run"."""
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(report.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(report.title)}</h1>",
    ]
    if report.verdict:
        parts.append(_verdict_html(report.verdict))
    parts.append("<details><summary>About this run</summary><dl>")
    for label, value in report.facts:
        parts.append(f"<dt>{html.escape(str(label))}</dt><dd>{html.escape(_fmt(value))}</dd>")
    parts.append("</dl>")
    parts.append(f"<p class='note'>Generated {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M:%S} UTC "
                 "by squall report. Tables are also in tables/*.csv and tables/*.json next to this file.</p>")
    parts.append("</details>")
    for table in report.tables:
        parts.append(f"<h2>{html.escape(table.title)}</h2>")
        if table.note:
            parts.append(f"<p class='note'>{html.escape(table.note)}</p>")
        parts.append(html_table(table))
    if report.charts:
        parts.append("<h2>Charts</h2>")
    for title, png in report.charts:
        data = base64.b64encode(png).decode("ascii")
        parts.append(f"<figure><img alt='{html.escape(title)}' src='data:image/png;base64,{data}'>"
                     f"<figcaption class='note'>{html.escape(title)}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _verdict_html(verdict: Verdict) -> str:
    parts = ["<section class='verdict' id='verdict'>", f"<p class='headline'>{html.escape(verdict.headline)}</p>"]
    for title, rows in (("What changes, and why", verdict.changes), ("What it costs and frees", verdict.costs)):
        if rows:
            parts.append(f"<h3>{title}</h3>" + _rows_html(rows, list(rows[0])))
    parts.append("</section>")
    return "".join(parts)


def html_table(table: Table) -> str:
    columns = table.cols()
    if not table.rows:
        return "<p class='note'>(none)</p>"
    key = [c for c in table.key_columns or [] if c in columns]
    if not key or len(key) == len(columns):
        return _rows_html(table.rows, columns)
    return (_rows_html(table.rows, key)
            + f"<details><summary>All {len(columns)} columns</summary>{_rows_html(table.rows, columns)}</details>")


def _rows_html(rows: Sequence[dict], columns: Sequence[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for row in rows:
        cells = []
        for c in columns:
            v = row.get(c)
            cls = " class='t'" if isinstance(v, str) else ""
            cells.append(f"<td{cls}>{html.escape(_fmt(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<div class='scroll'><table><tr>{head}</tr>{''.join(body)}</table></div>"


def _fmt(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:
            return "–"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


def format_terminal_table(rows: Sequence[dict], columns: Sequence[str]) -> str:
    from squall.commandline import format_table

    return format_table(list(columns), [[_fmt(r.get(c)) for c in columns] for r in rows])
