"""Checks of a metrics row against its schema (``squall.metrics_schema``, docs/metrics.md).

Both the Spark validation (``spark_schema``, ``reason_column``) and the
pure-Python check (``row_problem``, used by the synthetic generator and the
pandas baseline) are derived from ``FIELDS``.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Optional

from squall.metrics_schema import FIELD_NAMES, FIELDS, PROCESSES, ColumnType

__all__ = ["CORRUPT", "FIELDS", "FIELD_NAMES", "PROCESSES", "reason_column", "row_problem", "spark_schema"]

CORRUPT = "_corrupt_record"


def spark_schema() -> Any:
    """The row schema as a Spark StructType, plus the corrupt-record column."""
    from pyspark.sql import types as T

    spark_type = {
        "float": T.DoubleType(),
        "int": T.LongType(),
        "str": T.StringType(),
        "object": T.MapType(T.StringType(), T.StringType()),
    }
    fields = [T.StructField(f.name, spark_type[f.type], True) for f in FIELDS]
    return T.StructType(fields + [T.StructField(CORRUPT, T.StringType(), True)])


def reason_column(parsed: str, keys: str) -> Any:
    """A Spark column: why a parsed row is malformed, or null when it is valid.

    ``parsed`` is the struct column from ``from_json`` (with ``CORRUPT``),
    ``keys`` the array of the line's top-level keys (``json_object_keys``).
    The first failing check wins, in the order of the table in docs/metrics.md.
    """
    from pyspark.sql import functions as F

    p = lambda name: F.col(f"{parsed}.{name}")  # noqa: E731
    required = F.array(*[F.lit(n) for n in FIELD_NAMES])
    missing = F.array_except(required, F.col(keys))
    branches = F.when(F.col(keys).isNull(), F.lit("not a JSON object"))
    branches = branches.when(F.size(missing) > 0, F.concat(F.lit("missing key "), F.array_join(missing, ", ")))
    branches = branches.when(p(CORRUPT).isNotNull(), F.lit("a value has the wrong type"))
    for f in FIELDS:
        if not f.nullable:
            branches = branches.when(p(f.name).isNull(), F.lit(f"{f.name} is null"))
    for f in FIELDS:
        if f.positive:
            branches = branches.when(p(f.name) <= 0, F.lit(f"{f.name} must be > 0"))
        if f.min is not None:
            branches = branches.when(p(f.name) < f.min, F.lit(f"{f.name} must be >= {f.min:g}"))
        if f.type == "float":
            branches = branches.when(F.isnan(p(f.name)), F.lit(f"{f.name} is NaN"))
    branches = branches.when(
        ~p("process").isin(*PROCESSES), F.concat(F.lit("unknown process "), p("process"))
    )
    branches = branches.when(
        (p("process") == "instance") & p("task_id").isNull(), F.lit("task_id is null for an instance")
    )
    return branches.otherwise(F.lit(None).cast("string"))


def row_problem(row: object) -> Optional[str]:
    """The same checks in plain Python: the reason a decoded row is malformed, or None."""
    if not isinstance(row, Mapping):
        return "not a JSON object"
    missing = [n for n in FIELD_NAMES if n not in row]
    if missing:
        return "missing key " + ", ".join(missing)
    for f in FIELDS:
        value = row[f.name]
        if value is None:
            continue
        if not _has_type(value, f.type):
            return "a value has the wrong type"
    for f in FIELDS:
        if not f.nullable and row[f.name] is None:
            return f"{f.name} is null"
    for f in FIELDS:
        value = row[f.name]
        if value is None or f.type not in ("float", "int"):
            continue
        if f.positive and value <= 0:
            return f"{f.name} must be > 0"
        if f.min is not None and value < f.min:
            return f"{f.name} must be >= {f.min:g}"
        if isinstance(value, float) and math.isnan(value):
            return f"{f.name} is NaN"
    if row["process"] not in PROCESSES:
        return f"unknown process {row['process']}"
    if row["process"] == "instance" and row["task_id"] is None:
        return "task_id is null for an instance"
    return None


def _has_type(value: object, kind: ColumnType) -> bool:
    if isinstance(value, bool):
        return False
    if kind == "float":
        return isinstance(value, (int, float))
    if kind == "int":
        return isinstance(value, int)
    if kind == "str":
        return isinstance(value, str)
    return isinstance(value, Mapping)
