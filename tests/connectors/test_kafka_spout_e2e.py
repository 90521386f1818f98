"""The KafkaSpout on a real local cluster: exactly once through a SIGKILL and rescales (2 -> 3 -> 2), and a submit
refused before launch when the broker or the topic is not there (at least once through SIGKILLs, and the
metrics: tests/connectors/test_kafka_to_parquet.py).

tests/connectors/topologies/kafka_count.py: KafkaSpout (par 2) -> a two-phase counting sink whose
committed output is ``"<partition>:<offset>" -> times counted`` as of the newest complete checkpoint.
Records are produced while it runs, so the kills and the rescale happen mid-stream.
"""
import json
import os
import signal

import pytest

ck = pytest.importorskip("confluent_kafka")

from squall.testing import wait_until  # noqa: E402
from squall.testing.sinks import committed_counts  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOPOLOGY = os.path.join(HERE, "topologies", "kafka_count.py")
RECORDS = 20_000
PARTITIONS = 4


def produce(bootstrap, topic, start, stop):
    p = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(start, stop):
        p.produce(topic, key=f"k{i % 997}", value=f"v{i}", partition=i % PARTITIONS)
        if i % 5000 == 0:
            p.poll(0)
    assert p.flush(30) == 0


def committed(out):
    """(checkpoint, counts) of the newest checkpoint every count task has committed."""
    return committed_counts(out)


def seen(out):
    return len(committed(out)[1])


def progress(out, beyond, what):
    wait_until(lambda: seen(out) > beyond, timeout=60, interval=0.3,
               what=f"committed counts past {beyond} records ({what})")
    return seen(out)


def spout_tasks(cluster):
    plan = json.loads(cluster.squall("show", "kafka_count", "--json")[0])
    return [p for p in plan["processes"] if p["process"].startswith("instance kafka")]


def submit(cluster, bootstrap, topic, out, *props):
    args = ["submit", TOPOLOGY, "--config-property", f"kafka.bootstrap.servers={bootstrap}",
            "--config-property", f"kafka.topics={topic}", "--config-property", f"testing.out.dir={out}"]
    for p in props:
        args += ["--config-property", p]
    cluster.squall(*args)


def every():
    return {f"{i % PARTITIONS}:{i // PARTITIONS}" for i in range(RECORDS)}


def test_effectively_once_through_a_spout_sigkill_and_rescales_every_record_counted_once(
        cluster, kafka_bootstrap, topic_name, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    produce(kafka_bootstrap, topic_name, 0, 6000)
    submit(cluster, kafka_bootstrap, topic_name, out)
    done = progress(out, 2000, "before any kill")

    os.kill(spout_tasks(cluster)[0]["pid"], signal.SIGKILL)
    produce(kafka_bootstrap, topic_name, 6000, 12000)
    done = progress(out, max(done, 6000), "after a KafkaSpout task's SIGKILL")

    cluster.squall("update", "kafka_count", "--component-parallelism", "kafka=3")
    assert len(spout_tasks(cluster)) == 3
    produce(kafka_bootstrap, topic_name, 12000, 16000)
    progress(out, max(done, 12000), "with 3 KafkaSpout tasks")

    cluster.squall("update", "kafka_count", "--component-parallelism", "kafka=2")
    wait_until(lambda: len(spout_tasks(cluster)) == 2, timeout=30, what="the third spout task retired")
    produce(kafka_bootstrap, topic_name, 16000, RECORDS)
    wait_until(lambda: seen(out) >= RECORDS, timeout=90, interval=0.5,
               what=f"all {RECORDS} records committed (so far {seen(out)})")
    checkpoint, counts = committed(out)
    cluster.squall("kill", "kafka_count")
    assert set(counts) == every()
    twice = {k: n for k, n in counts.items() if n != 1}
    assert not twice, f"checkpoint {checkpoint}: records counted other than once: {dict(list(twice.items())[:10])}"


@pytest.mark.parametrize("dry_run", [False, True])
def test_submit_is_refused_before_launch_for_a_missing_topic(cluster, kafka_bootstrap, tmp_path, dry_run):
    args = ["submit", TOPOLOGY, "--config-property", f"kafka.bootstrap.servers={kafka_bootstrap}",
            "--config-property", "kafka.topics=no-such-topic", "--config-property", f"testing.out.dir={tmp_path}"]
    _, err = cluster.squall(*args, *(["--dry-run"] if dry_run else []), expect=2)
    assert "components.kafka" in err and "Kafka topic 'no-such-topic' does not exist" in err
    assert not cluster.processes()


def test_submit_is_refused_before_launch_for_a_broker_that_does_not_answer(cluster, tmp_path):
    """(``--dry-run``: the same preflight as a submit, which the missing topic's test runs both ways.)"""
    args = ["submit", TOPOLOGY, "--config-property", "kafka.bootstrap.servers=127.0.0.1:1",
            "--config-property", "kafka.topics=t", "--config-property", f"testing.out.dir={tmp_path}"]
    _, err = cluster.squall(*args, "--dry-run", expect=2)
    assert "kafka.bootstrap.servers 127.0.0.1:1: no broker answered" in err
    assert not cluster.processes()


def test_a_bad_kafka_key_is_refused_at_submit(cluster, tmp_path):
    _, err = cluster.squall("submit", TOPOLOGY, "--config-property", "kafka.start=newest",
                            "--config-property", "kafka.bootstrap.servers=127.0.0.1:1",
                            "--config-property", "kafka.topics=t",
                            "--config-property", f"testing.out.dir={tmp_path}", expect=2)
    assert "components.kafka" in err and "kafka.start is 'newest'" in err
