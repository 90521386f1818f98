"""Getting a SparkSession for the reports: ``local[*]`` by default, any master."""
from __future__ import annotations

import os
import sys
from typing import Any, Optional

DEFAULT_MASTER = "local[*]"


def spark_session(master: Optional[str] = None, app_name: str = "squall-report", driver_memory: str = "4g") -> Any:
    """Start (or reuse) a SparkSession whose Python workers run this interpreter.

    The Spark UI and the console progress bar are off (the reports draw their
    own progress); Spark's log is turned down to errors.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    master = master or DEFAULT_MASTER
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8" if master.startswith("local") else "200")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.jsonGenerator.ignoreNullFields", "false")
    )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
