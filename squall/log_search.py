"""Searching a container's log files: the lines a regular expression matches, newest first, bounded.

Shared by the container's debug server (``runtime/debug_server.py``: each container searches its own files,
where they are) and ``squall logs --grep`` on a stopped topology's run folder. Pure apart from reading files.

A log line starts with its local time (``runtime/bootstrap.py``'s format, ``2026-11-26 15:51:50,123 INFO
...``); a line without one (a traceback, a ``print``) takes the time of the line before it. A process's
rotated copies (``x.log.1`` newest ... ``x.log.<backups>``, ``runtime/logrotate.py``) are searched too; a
file last written before ``since`` is not opened.
"""
from __future__ import annotations

import glob
import heapq
import os
import re
import time
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Iterator, Optional

from squall.errors import SquallError
from squall.logical import process_tasks

_STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")
STAMP_CHARS = 23
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_TIME_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d")
MAX_LINE_CHARS = 2000  # a matched line is cut to this many characters


@dataclass(frozen=True)
class Match:
    """One matching line: its time (None: before any stamped line of its file), file, line number (from 1)."""

    time: Optional[float]
    file: str
    line: int
    text: str

    def to_json(self) -> dict:
        return {"time": self.time, "file": self.file, "line": self.line, "text": self.text}

    @classmethod
    def from_json(cls, data: dict) -> "Match":
        return cls(data["time"], str(data["file"]), int(data["line"]), str(data["text"]))


@dataclass(frozen=True)
class SearchResult:
    matches: tuple[Match, ...]  # newest first
    total: int  # every match found; more than ``len(matches)``: the result was cut at its limit
    files: int  # files read

    @property
    def truncated(self) -> bool:
        return self.total > len(self.matches)


def compile_pattern(text: str) -> re.Pattern:
    """``text`` as a regular expression; a SquallError naming what is wrong with it."""
    try:
        return re.compile(text)
    except re.error as e:
        raise SquallError(f"--grep {text!r} is not a regular expression: {e}") from None


def parse_since(text: str, now: float) -> float:
    """``--since``: a duration back from ``now`` (``90s``, ``10m``, ``2h``, ``1d``) or a local time
    (``2026-11-26T15:04:05``, ``2026-11-26 15:04``, ``2026-11-26``), as seconds since the epoch."""
    duration = _DURATION.fullmatch(text.strip())
    if duration:
        return now - float(duration.group(1)) * _UNITS[duration.group(2)]
    for fmt in _TIME_FORMATS:
        try:
            return time.mktime(time.strptime(text.strip(), fmt))
        except ValueError:
            continue
    raise SquallError(f"--since {text!r}: give a duration (90s, 10m, 2h, 1d) or a local time "
                      f"(2026-11-26T15:04:05, 2026-11-26 15:04, 2026-11-26)")


def log_files(log_dir: str, component: Optional[str] = None) -> list[str]:
    """The log files of a container's folder with their rotated copies, newest first within each process;
    with ``component``, only those of the processes that run one of its tasks (a chain's too)."""
    found = []
    for path in glob.glob(os.path.join(log_dir, "*.log")):
        name = os.path.basename(path)[:-len(".log")]
        if component is not None and not any(c == component for _, c in process_tasks(name)):
            continue
        rotated = [p for p in glob.glob(path + ".*") if p[len(path) + 1:].isdigit()]
        found += [path] + sorted(rotated, key=lambda p: int(p[len(path) + 1:]))
    return sorted(found, key=lambda p: (p.rpartition(".log")[0], _rotation(p)))


def search(files: Iterable[str], pattern: re.Pattern, since: Optional[float] = None,
           limit: int = 500) -> SearchResult:
    """The newest ``limit`` lines of ``files`` that ``pattern`` matches (at or after ``since`` when given).

    A file is written in time order, so its newest matches are its last ones: each file keeps only its last
    ``limit`` (a bounded deque; no object per match), and the files' are merged by time at the end."""
    candidates: list[tuple[tuple[str, int, int], int, str, str]] = []
    total = read = 0
    for order, path in enumerate(files):
        try:
            if since is not None and os.path.getmtime(path) < since:
                continue
            read += 1
            last: deque[tuple[str, int, str]] = deque(maxlen=limit)
            for found in _matches(path, pattern, since):
                last.append(found)
                total += 1
        except OSError:
            continue  # rotated away or removed while searching: its lines are in the next copy
        rotation = _rotation(path)
        # newer: a later time (stamps sort as text); at one time a file written later (not rotated), a later line
        candidates += [((stamp, -rotation, number), -order, path, text) for stamp, number, text in last]
        if len(candidates) > 2 * limit:
            candidates = heapq.nlargest(limit, candidates, key=_order)
    newest = heapq.nlargest(limit, candidates, key=_order)
    return SearchResult(tuple(Match(_time_of(key[0]), path, key[2], text) for key, _, path, text in newest),
                        total, read)


def _order(candidate: tuple) -> tuple:
    return candidate[:2]


def _matches(path: str, pattern: re.Pattern, since: Optional[float]) -> Iterator[tuple[str, int, str]]:
    """(stamp, line number, text) of each matching line of ``path``, in file order (stamp ``""`` before the
    first stamped line). Stamps stay text, compared as text (their format sorts as time does)."""
    stamp = ""
    after = None if since is None else _stamp_text(since)
    with open(path, errors="replace") as f:
        for number, line in enumerate(f, 1):
            if _STAMP.match(line):
                stamp = line[:STAMP_CHARS]
            if after is not None and stamp < after:
                continue
            if pattern.search(line):
                yield stamp, number, line.rstrip("\n")[:MAX_LINE_CHARS]


@lru_cache(maxsize=4096)
def _seconds(text: str) -> float:
    return time.mktime(time.strptime(text, "%Y-%m-%d %H:%M:%S"))


def _time_of(stamp: str) -> Optional[float]:
    """``2026-11-26 15:51:50,123`` (local time) as seconds since the epoch (``""``: None)."""
    return _seconds(stamp[:19]) + int(stamp[20:23]) / 1000.0 if stamp else None


def _stamp_text(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + f",{int(t * 1000) % 1000:03d}"


def _rotation(path: str) -> int:
    """0 for a live log file, k for its rotated copy ``.log.k`` (older as k grows)."""
    suffix = path.rpartition(".log")[2]
    return int(suffix[1:]) if suffix[1:].isdigit() else 0
