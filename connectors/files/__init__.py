"""File connectors: ``FileSpout`` reads the files that appear in a directory, ``FileSink`` writes part
files Spark reads; a local directory or HDFS through pyarrow (docs/connectors.md)."""
from squall.connectors.files.sink import FileSink
from squall.connectors.files.spout import FileSpout

__all__ = ["FileSink", "FileSpout"]
