"""The UI's pure parts: windows, relative links, colours, graph layout, charts, report names, its config."""
import subprocess
import sys

import pytest

from squall.conf import ConfigError, base_config
from squall.ui.capacity import report_path
from squall.ui.metrics import BadRequest, parse_window
from squall.ui.pages import root_of
from squall.ui.server import token_of, ui_config
from squall.ui.svg import colour, dag, layers, line_chart
from squall.ui.views import NotFound, grouped_errors


def test_windows_by_name_or_seconds():
    assert [parse_window(w) for w in (None, "", "60s", "600", "3600", "all")] == ["10m", "10m", "60s", "10m", "1h",
                                                                                   "all"]
    with pytest.raises(BadRequest, match=r"window '5m': expected one of 60s, 10m, 1h, all"):
        parse_window("5m")


def test_links_lead_back_to_the_top_relatively_so_a_proxy_prefix_keeps_working():
    assert root_of("/") == "./"
    assert root_of("/cluster") == "./"
    assert root_of("/topology/wc") == "../"
    assert root_of("/topology/wc/component/split") == "../../../"


def test_colours_run_from_green_to_red_and_grey_without_a_value():
    assert colour(None) == "#d9d9d9"
    low, mid, high = colour(0.0), colour(0.5), colour(1.0)
    assert low[1:3] == "00" and high[1:3] == "e6" and mid != low != high
    assert colour(7.0) == high and colour(-1) == low


def test_graph_columns_follow_the_longest_path_and_survive_a_cycle():
    comps = [{"name": "s", "inputs": []}, {"name": "a", "inputs": [{"component": "s"}]},
             {"name": "b", "inputs": [{"component": "a"}, {"component": "s"}]},
             {"name": "loop", "inputs": [{"component": "b"}, {"component": "loop"}]}]
    assert layers(comps) == {"s": 0, "a": 1, "b": 2, "loop": 3}


def test_the_graph_marks_chained_edges_and_keeps_their_grouping_in_the_title():
    comps = [{"name": "spout", "parallelism": 2, "inputs": []},
             {"name": "split", "parallelism": 2, "inputs": [{"component": "spout", "stream": "default",
                                                             "grouping": "shuffle"}]},
             {"name": "count", "parallelism": 3, "inputs": [{"component": "split", "stream": "default",
                                                             "grouping": "fields(word)"}]}]
    svg = str(dag(comps, {}, {}, {}, [["spout", "split"]]))
    assert svg.count('class="edge chained"') == 1 and svg.count('class="edge"') == 1
    assert ">chained</text>" in svg and "(shuffle, chained: one process)</title>" in svg
    assert ">fields(word)</text>" in svg
    assert 'class="edge chained"' not in str(dag(comps, {}, {}, {}))


def test_a_chart_draws_one_line_per_series_and_says_when_it_has_none():
    empty = line_chart({}, "rate", "tuples/s", 0.0, 60.0)
    assert "no figures in this window yet" in empty and "polyline" not in empty
    chart = line_chart({"split": [(10.0, 5.0), (20.0, None), (30.0, 7.5)], "count": [(10.0, 1.0)]}, "rate",
                       "tuples/s", 0.0, 60.0)
    assert chart.count("<polyline") == 2 and 'data-series="split"' in chart
    assert "<script" not in line_chart({"<script>": [(1.0, 1.0)]}, "x", "y", 0.0, 2.0)  # names are escaped


def test_reports_are_named_by_folder_never_by_path(tmp_path):
    (tmp_path / "capacity-a").mkdir()
    (tmp_path / "capacity-a" / "report.json").write_text("{}")
    assert report_path(str(tmp_path), "capacity-a") == str(tmp_path / "capacity-a")
    for bad in ("../capacity-a", "/etc", "..", "", "capacity-b"):
        with pytest.raises(NotFound, match="report"):
            report_path(str(tmp_path), bad)


def test_errors_group_by_component_and_line_newest_first():
    errors = [{"component": "c", "task": t, "time": float(t), "where": "process()", "error": e, "traceback": str(t)}
              for t, e in ((1, "A"), (2, "B"), (3, "A"), (4, "A"))]
    groups = grouped_errors(errors)
    assert [(g["error"], g["count"], g["tasks"], g["first"], g["last"], g["traceback"]) for g in groups] == \
        [("A", 3, [1, 3, 4], 1.0, 4.0, "4"), ("B", 1, [2], 2.0, 2.0, "2")]


def test_the_ui_config_refuses_a_misspelt_key_and_makes_a_token_when_none_is_set():
    with pytest.raises(ConfigError, match=r"did you mean 'squall.ui.token'"):
        ui_config(base_config(), ["squall.ui.tokn=x"])
    config = ui_config(base_config(), ["squall.ui.token=abc", "squall.ui.port=0"])
    assert token_of(config) == ("abc", False) and config["squall.ui.port"] == 0
    made, printed = token_of(base_config())
    assert printed and len(made) >= 20 and token_of(base_config())[0] != made


def test_runtime_processes_never_import_the_ui_or_its_web_stack():
    modules = ["squall.runtime.executor", "squall.runtime.process", "squall.runtime.instance", "squall.runtime.stmgr",
               "squall.runtime.tmaster", "squall.runtime.metricsmgr"]
    heavy = ["squall.ui", "fastapi", "starlette", "uvicorn", "jinja2", "selenium"]
    code = (f"import sys\nfor m in {modules!r}: __import__(m)\n"
            f"print(','.join(sorted(h for h in {heavy!r} if h in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"runtime processes import {out}"


def test_a_topology_that_checkpoints_gets_a_line_of_its_figures():
    from squall.ui.views import _checkpoints

    figures = {"mode": "EFFECTIVELY_ONCE", "interval_secs": 1.0, "completed": 12, "failed": 1, "restores": 2,
               "last_restore_ms": 41.5, "last_id": 13, "duration_ms": 20.0, "bytes": 2048, "align_ms": 3.25}
    assert _checkpoints({"checkpoints": figures})["line"] == (
        "checkpoints (EFFECTIVELY_ONCE, every 1 s): 12 complete, 1 abandoned, 2 restores (the last took 42 ms); "
        "last #13: 2.0 KiB in 20 ms, alignment 3.2 ms")
    assert _checkpoints({"components": {}}) is None and _checkpoints(None) is None
