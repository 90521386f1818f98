"""``squall report`` through the CLI: in process (sharing the Spark session) and as a real subprocess."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from squall.cli import main

SQUALL = os.path.join(os.path.dirname(sys.executable), "squall")


def test_cli_module_imports_nothing_heavy():
    code = ("import sys, squall.cli; squall.cli.build_parser(); "
            "heavy = [m for m in ('pyspark', 'pandas', 'matplotlib') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_subprocess_no_metrics_files(tmp_path):
    proc = subprocess.run([SQUALL, "report", "capacity", "--metrics", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == f"squall: error: no metrics files (*.jsonl) under {tmp_path}\n"


def test_capacity_report_json_names_its_files_and_opens_with_the_verdict(spark, known_run, tmp_path, capsys):
    """In process, on the session's Spark (a subprocess would start a JVM of its own: 30 s; the console script
    itself is run by the test above)."""
    out = tmp_path / "report"
    assert main(["report", "capacity", "--metrics", known_run, "--target-rate", "work=10000", "--out", str(out),
                 "--json", "--no-progress"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["html"] == str(out / "report.html") and os.path.isfile(result["html"])
    assert any(line.strip().startswith("work") and "-> 12" in line for line in result["summary"])
    page = open(result["html"]).read()
    verdict = json.load(open(result["json"]))["verdict"]
    assert verdict["headline"].startswith("Scale ") and "work 4 → 12" in verdict["headline"].split(".")[0]
    assert page.index("id='verdict'") < page.index("<h2>Recommendations</h2>")  # the decision comes first


def test_malformed_row_is_one_line_exit_2(spark, known_run, tmp_path, capsys):
    run_dir = tmp_path / "run"
    shutil.copytree(known_run, run_dir)
    with open(run_dir / "metrics" / "container-1.jsonl", "a") as f:
        f.write('{"ts": "yesterday"}\n')
    assert main(["report", "capacity", "--metrics", str(run_dir), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["squall: error: 1 of 961 metrics rows are malformed (first reason: missing key interval_secs, "
                   "topology, run_id, container, host, process, component, task_id, emit_count, execute_count, "
                   "ack_count, fail_count, execute_latency_ms, process_latency_ms, complete_latency_ms, queue_depth, "
                   "backpressure_ms, cpu_percent, rss_mb, threads, cpu_requested, ram_requested_mb, user, 1 rows, "
                   "e.g. in container-1.jsonl); pass --skip-malformed to report without them"]


def test_unknown_topology_exit_2(spark, known_run, capsys):
    assert main(["report", "capacity", "--metrics", known_run, "--topology", "nope", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("squall: error: no metrics for topology 'nope'")


def test_packing_report_in_process(spark, tmp_path, capsys):
    from squall.reports.synthetic import write_topologies

    write_topologies(str(tmp_path / "t"), 2, seed=3, prefix="cli")
    assert main(["report", "packing", "--topologies", str(tmp_path / "t"), "--out", str(tmp_path / "o"),
                 "--no-progress", "--no-charts"]) == 0
    out = capsys.readouterr().out
    assert "2 topologies × 8 policies = 16 packings" in out
    assert os.path.isfile(tmp_path / "o" / "tables" / "policies.csv")
    assert main(["report", "packing", "--topologies", str(tmp_path / "missing")]) == 2
