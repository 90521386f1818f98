"""A flame graph as SVG from folded stacks: ``{"root;caller;callee": samples}``, root first (the format of
Brendan Gregg's ``flamegraph.pl`` and of ``py-spy record --format raw``).

Each frame is a box as wide as its share of the samples, its callers below it; hovering shows
``function (file) - N samples, P%`` (or ``N cpu ms``). Pure: text in, text out.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Mapping
from xml.sax.saxutils import escape, quoteattr

WIDTH = 1200
ROW = 17  # pixels per stack level
TOP = 36  # room for the title
CHAR = 6.6  # pixels per character at font-size 11 (labels are cut to fit their box)
MIN_WIDTH = 0.3  # pixels; narrower frames are left out (their samples still count in their caller)


@dataclass
class _Node:
    name: str
    samples: int = 0
    children: dict[str, "_Node"] = field(default_factory=dict)


def parse_folded(text: str) -> dict[str, int]:
    """``stack count`` lines (``flamegraph.pl``'s input) as a mapping; malformed lines are skipped."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if stack and count.isdigit():
            out[stack] = out.get(stack, 0) + int(count)
    return out


def render(folded: Mapping[str, int], title: str, unit: str = "samples") -> str:
    """The SVG document of ``folded``'s flame graph (a valid empty graph when there are no samples); ``unit``:
    what the counts are (``samples``, ``cpu ms``)."""
    root = _Node("all")
    for stack, count in folded.items():
        if count <= 0:
            continue
        root.samples += count
        node = root
        for frame in stack.split(";"):
            node = node.children.setdefault(frame, _Node(frame))
            node.samples += count
    depth = _depth(root)
    height = TOP + (depth + 1) * ROW + 8
    boxes: list[str] = []
    scale = (WIDTH - 20) / root.samples if root.samples else 0.0
    _layout(root, 10.0, 0, scale, root.samples, height, unit, boxes)
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="flame" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" font-family="monospace" font-size="11">')
    caption = (f'<text x="{WIDTH / 2:.0f}" y="20" text-anchor="middle" font-size="15">{escape(title)}</text>'
               f'<text x="10" y="{TOP - 6}" fill="#555">{root.samples} {escape(unit)}</text>')
    return "\n".join(['<?xml version="1.0" encoding="UTF-8"?>', head,
                      f'<rect width="{WIDTH}" height="{height}" fill="#fdf8ee"/>', caption, *boxes, "</svg>"]) + "\n"


def _depth(node: _Node) -> int:
    return 1 + max((_depth(c) for c in node.children.values()), default=-1) if node.children else 0


def _layout(node: _Node, x: float, level: int, scale: float, total: int, height: int, unit: str,
            out: list[str]) -> None:
    width = node.samples * scale
    if width < MIN_WIDTH:
        return
    y = height - 8 - (level + 1) * ROW
    share = 100.0 * node.samples / total if total else 0.0
    tip = f"{node.name} - {node.samples} {unit}, {share:.1f}%"
    room = int((width - 6) / CHAR)
    label = node.name if len(node.name) <= room else (node.name[:room - 2] + ".." if room > 3 else "")
    out.append(f'<g class="frame"><title>{escape(tip)}</title>'
               f'<rect x="{x:.2f}" y="{y}" width="{width:.2f}" height="{ROW - 1}" rx="2" '
               f'fill={quoteattr(_colour(node.name))}/>'
               + (f'<text x="{x + 3:.2f}" y="{y + ROW - 5}">{escape(label)}</text>' if label else "") + "</g>")
    child_x = x
    for child in sorted(node.children.values(), key=lambda c: c.name):
        _layout(child, child_x, level + 1, scale, total, height, unit, out)
        child_x += child.samples * scale


def _colour(name: str) -> str:
    """A warm colour, the same for a function every time (so two graphs compare by eye)."""
    h = zlib.crc32(name.encode())
    return f"rgb({205 + h % 50},{(h >> 8) % 180 + 40},{(h >> 16) % 55})"
