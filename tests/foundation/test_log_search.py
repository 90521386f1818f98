"""squall/log_search.py on real files: newest first across processes and rotated copies, the time of an
unstamped line, --since, the cap and its count, a component's files, and the refusals' messages."""
import os
import time

import pytest

from squall.errors import SquallError
from squall.log_search import compile_pattern, log_files, parse_since, search


def stamp(t):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + ",250"


def write(path, lines):
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in lines))


@pytest.fixture
def logs(tmp_path):
    t0 = time.mktime(time.strptime("2026-11-26 10:00:00", "%Y-%m-%d %H:%M:%S"))
    d = tmp_path / "container-1"
    d.mkdir()
    write(d / "instance-3-split.log.1", [f"{stamp(t0)} INFO old: boom one"])  # rotated: older
    write(d / "instance-3-split.log", [f"{stamp(t0 + 60)} INFO new: boom two", "Traceback: boom in a traceback",
                                       f"{stamp(t0 + 120)} INFO quiet"])
    write(d / "instance-4-count.log", [f"{stamp(t0 + 90)} INFO boom three"])
    write(d / "stmgr.log", [f"{stamp(t0 + 30)} INFO boom daemon"])
    return str(d), t0


def test_matches_come_newest_first_with_file_line_and_the_time_of_the_line_above(logs):
    folder, t0 = logs
    found = search(log_files(folder), compile_pattern("boom"))
    assert [(os.path.basename(m.file), m.line) for m in found.matches] == [
        ("instance-4-count.log", 1), ("instance-3-split.log", 2), ("instance-3-split.log", 1),
        ("stmgr.log", 1), ("instance-3-split.log.1", 1)]
    traceback = found.matches[1]
    assert traceback.text == "Traceback: boom in a traceback" and traceback.time == t0 + 60.25
    assert (found.total, found.truncated, found.files) == (5, False, 4)


def test_since_the_cap_and_a_component_narrow_the_search(logs):
    folder, t0 = logs
    later = search(log_files(folder), compile_pattern("boom"), since=t0 + 45)
    assert [m.text for m in later.matches] == ["2026-11-26 10:01:30,250 INFO boom three",
                                               "Traceback: boom in a traceback",
                                               "2026-11-26 10:01:00,250 INFO new: boom two"]
    cut = search(log_files(folder), compile_pattern("boom"), limit=2)
    assert [m.line for m in cut.matches] == [1, 2] and cut.total == 5 and cut.truncated
    assert [os.path.basename(p) for p in log_files(folder, "split")] == ["instance-3-split.log",
                                                                         "instance-3-split.log.1"]
    assert log_files(folder, "nosuch") == []


def test_since_reads_durations_and_local_times():
    now = 1_000_000.0
    assert parse_since("90s", now) == now - 90 and parse_since("10m", now) == now - 600
    assert parse_since("2h", now) == now - 7200 and parse_since("1d", now) == now - 86400
    assert parse_since("2026-11-26T15:04:05", now) == time.mktime((2026, 11, 26, 15, 4, 5, 0, 0, -1))
    assert parse_since("2026-11-26", now) == time.mktime((2026, 11, 26, 0, 0, 0, 0, 0, -1))
    with pytest.raises(SquallError, match=r"^--since 'yesterday': give a duration \(90s, 10m, 2h, 1d\) or a local "
                                          r"time"):
        parse_since("yesterday", now)


def test_a_bad_regular_expression_is_named():
    with pytest.raises(SquallError, match=r"^--grep '\(' is not a regular expression: missing \), unterminated "
                                          r"subpattern at position 0$"):
        compile_pattern("(")
