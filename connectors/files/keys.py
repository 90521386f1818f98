"""What the file connectors share: their ``files.*`` keys, defaults and the checks of their values.

Every key lives in ``files.*``. A topology may set keys for a spout and a sink at its own level, so a key
is refused only when neither knows it (naming the nearest known one).
"""
from __future__ import annotations

import difflib
from typing import Mapping, Sequence
from urllib.parse import urlparse

PATH = "files.path"
FORMAT = "files.format"
PARTITION_BY = "files.partition.by"
ROLL_SIZE = "files.roll.size.mb"
ROLL_INTERVAL = "files.roll.interval.secs"
DISCOVER_INTERVAL = "files.discover.interval.secs"
READ_BATCH = "files.read.batch"

SCHEMES = ("", "file", "hdfs", "viewfs")
SINK_FORMATS = ("parquet", "jsonl")
SPOUT_FORMATS = ("text", "jsonl", "csv", "parquet")

#: every ``files.*`` key, with its default (None: required or none) and its meaning
KEYS: dict = {
    PATH: (None, "a local directory, a file:// URI or an hdfs://namenode:port/path URI"),
    FORMAT: (None, "FileSink: parquet (default) | jsonl; FileSpout: text (default) | jsonl | csv | parquet"),
    PARTITION_BY: ("", "FileSink: comma-separated field names, written as Hive-style field=value/ folders"),
    ROLL_SIZE: (128.0, "FileSink: a part file is committed once it holds about this many MB"),
    ROLL_INTERVAL: (10.0, "FileSink: a part file is committed at the latest this many seconds after it opened"),
    DISCOVER_INTERVAL: (1.0, "FileSpout: seconds between two listings of the directory"),
    READ_BATCH: (1000, "FileSpout: records read and emitted per next_tuple call at most"),
}


def check_keys(config: Mapping[str, object]) -> None:
    """Refuse a ``files.*`` key no file connector knows, naming the nearest known one."""
    for key in config:
        if isinstance(key, str) and key.startswith("files.") and key not in KEYS:
            close = difflib.get_close_matches(key, list(KEYS), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(sorted(KEYS))})"
            raise ValueError(f"unknown file connector key {key!r}{hint}")


def path(config: Mapping[str, object]) -> str:
    value = config.get(PATH)
    if value is None or str(value).strip() == "":
        raise ValueError(f"{PATH} is not set: {KEYS[PATH][1]}")
    return str(value).strip()


def check_path(config: Mapping[str, object]) -> None:
    """When ``files.path`` is set (it may also come with ``--config-property``), its scheme is one the
    connectors open: none, ``file``, ``hdfs`` or ``viewfs``."""
    value = config.get(PATH)
    if value is None or str(value).strip() == "":
        return
    scheme = urlparse(str(value).strip()).scheme
    if scheme not in SCHEMES:
        raise ValueError(f"{PATH} {value!r}: unknown scheme {scheme!r} (a directory, file:// or hdfs://)")


def file_format(config: Mapping[str, object], choices: Sequence[str]) -> str:
    """The format named by ``files.format`` (the first choice by default), one of ``choices``."""
    value = config.get(FORMAT)
    value = choices[0] if value is None or value == "" else str(value).strip().lower()
    if value not in choices:
        raise ValueError(f"{FORMAT} {config.get(FORMAT)!r} is not a format this component knows: "
                         f"choose {', '.join(choices)}")
    return value


def positive(config: Mapping[str, object], key: str) -> float:
    value = config.get(key)
    if value is None:
        return float(KEYS[key][0])
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{key} must be a positive number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{key} must be a positive number, got {value!r}") from None
    if not number > 0:
        raise ValueError(f"{key} must be a positive number, got {value!r}")
    return number


def field_list(config: Mapping[str, object], key: str) -> list:
    """A list of field names given as a list or a comma-separated string."""
    value = config.get(key) or []
    names = [n.strip() for n in value.split(",")] if isinstance(value, str) else list(value)
    if not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"{key} must be field names (a list or comma-separated), got {value!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"{key} names a field twice: {value!r}")
    return names
