"""Known-answer runs for the reports suite (its Spark session: tests/conftest.py)."""
from __future__ import annotations

import pytest

from squall.reports.synthetic import SyntheticComponent as C
from squall.reports.synthetic import SyntheticRun, write_run


# Task ids (components by name, from 1): count 1-4, light 5-6, spout 7, work 8-11.
KNOWN = SyntheticRun(
    "known",
    (
        C("spout", "spout", 1, rate=4000.0, capacity=10000.0, cpu_requested=1.0, rss_mb=100.0),
        # 4 instances, each offered 1,000 tuples/s and saturated at 1,000 tuples/s.
        C("work", "bolt", 4, rate=4000.0, capacity=1000.0, cpu_requested=1.0, ram_requested_mb=512, rss_mb=128.0),
        # 2 instances at 500 tuples/s of 2,500: 20 % of a core against 0.5 requested.
        C("light", "bolt", 2, rate=1000.0, capacity=2500.0, cpu_requested=0.5, ram_requested_mb=256, rss_mb=64.0),
        # A hot key: task 1 gets 5/8 of 4,000 = 2,500 tuples/s, the others 500.
        C("count", "bolt", 4, rate=4000.0, capacity=10000.0, weights=(5, 1, 1, 1)),
    ),
    buckets=60,
    containers=2,
)


@pytest.fixture(scope="session")
def known_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("metrics")
    return write_run(str(root), KNOWN, check=True)
