"""``squall update NAME --from-report DIR``: bad reports and wrong topologies are refused with one
line (exit 2) before anything is changed; a dry run changes nothing (see also test_closed_loop.py)."""
from __future__ import annotations

import json
import re

import pytest

from squall.cli import main


def write(tmp_path, data, name="report.json"):
    folder = tmp_path / "rep"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(data if isinstance(data, str) else json.dumps(data))
    return str(folder)


def report(topology="io_bound", rows=None):
    rows = [{"component": "wait", "recommended_parallelism": 3, "recommended_cpu_cores": 0.05,
             "recommended_ram_mb": 48}] if rows is None else rows
    return {"kind": "capacity", "facts": {"topology": topology}, "tables": {"recommendations": rows}}


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SQUALL_HOME", str(tmp_path / "home"))


def one_line_error(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    return err


@pytest.mark.parametrize("data, message", [
    (report(topology="cpu_bound"), r"was made for topology 'cpu_bound', not 'io_bound'"),
    ("{not json", r"is not valid JSON"),
    ({"kind": "packing"}, r"is not a capacity report \(kind 'packing'\)"),
    ({"kind": "capacity", "facts": {}}, r"has no facts.topology or tables.recommendations"),
    (report(rows=[{"component": "wait", "recommended_parallelism": 0}]),
     r"tables.recommendations\[0\].recommended_parallelism: expected an integer >= 1, got 0"),
    (report(rows=[{"component": "wait", "recommended_parallelism": 2, "recommended_cpu_cores": "lots"}]),
     r"tables.recommendations\[0\].recommended_cpu_cores: expected a number > 0 or null, got 'lots'"),
])
def test_bad_reports_are_refused_naming_what_is_wrong(tmp_path, capsys, data, message):
    err = one_line_error(capsys, ["update", "io_bound", "--from-report", write(tmp_path, data)])
    assert err.startswith("squall: error: --from-report ") or err.startswith("squall: error: /"), err
    assert re.search(message, err), err


def test_a_folder_without_a_report(tmp_path, capsys):
    err = one_line_error(capsys, ["update", "io_bound", "--from-report", str(tmp_path)])
    assert "no report.json there" in err


def test_a_report_for_a_topology_that_is_not_running(tmp_path, capsys):
    err = one_line_error(capsys, ["update", "io_bound", "--from-report", write(tmp_path, report())])
    assert "no topology named 'io_bound' is running" in err


@pytest.mark.parametrize("argv", [
    ["update", "io_bound"],
    ["update", "io_bound", "--dry-run"],
    ["update", "io_bound", "--from-report", "x", "--component-parallelism", "wait=2"],
])
def test_exactly_one_way_to_update(capsys, argv):
    assert "give either --component-parallelism COMPONENT=N or --from-report DIR" in one_line_error(capsys, argv)
