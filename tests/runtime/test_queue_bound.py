"""The stream manager's time bound on a local instance's queue, without sockets or clocks."""
from squall.runtime.queue_bound import QueueBound


def test_the_bound_follows_the_measured_rate_with_hysteresis():
    q = QueueBound(max_wait=1.0)
    assert not q.delivered(900), "before any rate is known, a batch fits"
    assert q.delivered(200) and q.over
    assert not q.consumed(500, now=0.0)  # first report: no rate yet
    assert not q.consumed(100, now=0.5)  # 200 tuples/s: limit 200; 500 queued -> still over
    assert q.rate == 200 and q.limit() == 200
    assert q.consumed(450, now=1.0)  # under half the limit again
    assert not q.over and q.queued == 50


def test_a_slow_instance_gets_a_small_queue_and_a_fast_one_a_large_one():
    slow, fast = QueueBound(max_wait=1.0), QueueBound(max_wait=1.0)
    for q, per_report in ((slow, 5), (fast, 5000)):
        q.delivered(10)
        for k in range(20):
            q.delivered(per_report)
            q.consumed(per_report, now=k * 0.01)
    assert round(slow.limit()) == 500 and round(fast.limit()) == 500_000
    tiny = QueueBound(max_wait=1.0, floor=64)
    tiny.delivered(1)
    tiny.consumed(1, 0.0)
    tiny.delivered(1)
    tiny.consumed(1, 10.0)  # 0.1 tuples/s: the floor, not a bound of 0 tuples
    assert tiny.limit() == 64
