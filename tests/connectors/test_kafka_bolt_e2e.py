"""KafkaBolt on the real local cluster (real processes, the test broker): a SIGKILL of a Kafka bolt's
instance mid-run leaves each number exactly once in what a read_committed consumer sees (EFFECTIVELY_ONCE)
and at least once (ATLEAST_ONCE); a missing topic is refused at submit."""
import json
import os
import signal
from collections import Counter

import pytest

from squall.testing import wait_until  # noqa: E402
from squall.testing.words import RATE_FILE_KEY, set_rate  # noqa: E402

ck = pytest.importorskip("confluent_kafka")
from test_kafka_bolt import read_all  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COUNT = 3000


def create_topics(bootstrap, *topics):
    """The mock cluster creates a topic on a metadata request; a real cluster needs auto-creation on."""
    producer = ck.Producer({"bootstrap.servers": bootstrap})
    for topic in topics:
        assert topic in producer.list_topics(topic, timeout=10).topics


def rate_file(cluster, topic):
    return os.path.join(cluster.home, f"{topic}.rate")


def submit(cluster, name, bootstrap, topic, *props, expect=0):
    args = ["submit", os.path.join(HERE, "topologies", f"{name}.py"),
            "--config-property", f"kafka.bootstrap.servers={bootstrap}", "--config-property", f"kafka.topic={topic}",
            "--config-property", f"numbers.count={COUNT}", "--config-property", f"{RATE_FILE_KEY}={rate_file(cluster, topic)}"]
    for p in props:
        args += ["--config-property", p]
    return cluster.squall(*args, expect=expect)


def sink_pid(cluster, name):
    processes = json.loads(cluster.squall("show", name, "--json")[0])["processes"]
    return next(p["pid"] for p in processes if p["process"].startswith("instance sink"))


def seen(bootstrap, topic, at_least):
    """What a read_committed consumer sees, once it sees at least ``at_least`` distinct numbers."""
    got = read_all(bootstrap, topic)
    return got if len(set(got)) >= at_least else None


def kill_a_sink_mid_run(cluster, name, bootstrap, topic):
    wait_until(lambda: seen(bootstrap, topic, COUNT // 5), timeout=60, interval=0.5,
               what=f"a fifth of {COUNT} numbers in {topic} before the kill")
    os.kill(sink_pid(cluster, name), signal.SIGKILL)
    before = len(set(read_all(bootstrap, topic)))
    wait_until(lambda: seen(bootstrap, topic, before + 1), timeout=60, interval=0.5,
               what="more numbers after the kill")
    set_rate(rate_file(cluster, topic), float("inf"))  # the kill is behind: the rest unpaced
    return wait_until(lambda: seen(bootstrap, topic, COUNT), timeout=90, interval=0.5,
                      what=f"all {COUNT} numbers in {topic}")


def test_effectively_once_a_killed_kafka_bolt_leaves_each_number_once(cluster, kafka_bootstrap, topic_name):
    create_topics(kafka_bootstrap, topic_name, f"{topic_name}.squall-commits")
    submit(cluster, "kafka_bolt_numbers", kafka_bootstrap, topic_name)
    got = kill_a_sink_mid_run(cluster, "kafka_bolt_numbers", kafka_bootstrap, topic_name)
    figures = json.loads(cluster.squall("metrics", "kafka_bolt_numbers", "--json")[0])["checkpoints"]
    cluster.squall("kill", "kafka_bolt_numbers")
    twice = {n: c for n, c in Counter(got).items() if c > 1}
    assert not twice, f"{len(twice)} numbers written more than once, e.g. {dict(list(twice.items())[:10])}"
    assert got == list(range(COUNT))
    assert figures["restores"] >= 2, figures  # the start, then the kill's rollback


def test_effectively_once_rescaling_the_kafka_bolt_2_to_3_leaves_each_number_once(cluster, kafka_bootstrap,
                                                                                  topic_name):
    create_topics(kafka_bootstrap, topic_name, f"{topic_name}.squall-commits")
    submit(cluster, "kafka_bolt_numbers", kafka_bootstrap, topic_name)
    wait_until(lambda: seen(kafka_bootstrap, topic_name, COUNT // 5), timeout=60, interval=0.5,
               what=f"a fifth of {COUNT} numbers in {topic_name} before the rescale")
    cluster.squall("update", "kafka_bolt_numbers", "--component-parallelism", "sink=3")
    set_rate(rate_file(cluster, topic_name), float("inf"))  # the rescale is done: the rest unpaced
    got = wait_until(lambda: seen(kafka_bootstrap, topic_name, COUNT), timeout=90, interval=0.5,
                     what=f"all {COUNT} numbers in {topic_name}")
    cluster.squall("kill", "kafka_bolt_numbers")
    twice = {n: c for n, c in Counter(got).items() if c > 1}
    assert not twice, f"{len(twice)} numbers written more than once, e.g. {dict(list(twice.items())[:10])}"
    assert got == list(range(COUNT))


def test_at_least_once_a_killed_kafka_bolt_loses_no_number(cluster, kafka_bootstrap, topic_name):
    create_topics(kafka_bootstrap, topic_name)
    submit(cluster, "kafka_bolt_reliable", kafka_bootstrap, topic_name)
    got = kill_a_sink_mid_run(cluster, "kafka_bolt_reliable", kafka_bootstrap, topic_name)
    cluster.squall("kill", "kafka_bolt_reliable")
    assert set(got) == set(range(COUNT))


def test_submit_refuses_a_missing_topic_and_launches_nothing(cluster, kafka_bootstrap, topic_name):
    _, err = submit(cluster, "kafka_bolt_numbers", kafka_bootstrap, topic_name, expect=2)
    assert "components.sink" in err and f"Kafka topic '{topic_name}' does not exist" in err, err
    assert not cluster.processes()
