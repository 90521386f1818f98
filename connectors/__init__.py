"""Sources and sinks for the data of a shared Hadoop/Spark cluster, built on the public component API.

- ``squall.connectors.kafka``: ``KafkaSpout`` and ``KafkaBolt`` (extra ``squall[kafka]``, confluent-kafka);
- ``squall.connectors.files``: ``FileSpout`` and ``FileSink`` over a local directory or ``hdfs://``
  (pyarrow, extra ``squall[hdfs]``).

Each is an ordinary spout or bolt configured by its component config (``kafka.*``, ``files.*``), usable
from ``TopologyBuilder`` and from the Streamlet API; docs/connectors.md has every key and the guarantees
per delivery mode.
"""
