"""Test harnesses for users' topologies, and Squall's own tests (docs/testing.md).

- ``LocalCluster``: the embedded local cluster as a context manager (submit, kill, show, metrics);
- ``complete_topology(topology, mocked={spout: [values, ...]})``: run it with mocked spouts until every
  tuple is processed and get what each component emitted (``.tuples(component, stream)``);
- ``wait_until(predicate, timeout, what)``: wait on a condition with a deadline;
- ``squall.testing.sinks``: ``CommittedCounts``, a two-phase counting sink for effectively-once tests, and
  ``committed_counts`` to read what it committed; ``squall.testing.words``, its replayable source
  (``counting_topology``, ``expected``);
- ``squall.testing.kafka.MockKafkaCluster``: a Kafka-protocol broker for tests;
- ``squall.testing.processes.processes_under(home)``: the live processes of a Squall home (what a test
  checks is gone after a kill);
- ``squall.testing.executors``: below the scheduler, a topology's state written as the launcher writes it
  and its executors run with the runtime contract's command (Squall's runtime tests);
- a pytest plugin (``squall.testing.plugin``, loaded when Squall is installed): the fixtures
  ``squall_cluster``, ``squall_zookeeper`` and ``squall_zk_cluster``.
"""
from squall.testing.cluster import LocalCluster
from squall.testing.complete import CaptureBolt, CompletedTopology, MockedSpout, complete_topology
from squall.testing.wait import wait_until

__all__ = ["CaptureBolt", "CompletedTopology", "LocalCluster", "MockedSpout", "complete_topology", "wait_until"]
