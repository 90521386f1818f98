"""Getting a SparkSession for the reports: ``local[*]`` by default, any master."""
from __future__ import annotations

import os
import sys
import tempfile
import warnings
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # pyspark is an extra (squall[reports]): imported where a session starts
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"

_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _log4j_file() -> str:
    """A log4j2 config that keeps Spark's JVM to errors (written once per process)."""
    path = os.path.join(tempfile.gettempdir(), f"squall-report-log4j2-{os.getuid()}.properties")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(_LOG4J)
    return path


def spark_session(master: Optional[str] = None, app_name: str = "squall-report", driver_memory: str = "4g") -> "SparkSession":
    """Start (or reuse) a SparkSession whose Python workers run this interpreter.

    The Spark UI and the console progress bar are off (the reports draw their
    own progress); Spark's log is turned down to errors.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    master = master or DEFAULT_MASTER
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8" if master.startswith("local") else "200")
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{_log4j_file()}")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.jsonGenerator.ignoreNullFields", "false")
    )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
