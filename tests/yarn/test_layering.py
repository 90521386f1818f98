"""Runtime processes import only what they need: never Skein, PySpark or the report stack."""
import subprocess
import sys

RUNTIME = ["squall.runtime.executor", "squall.runtime.process", "squall.runtime.instance", "squall.runtime.stmgr",
           "squall.runtime.tmaster", "squall.runtime.metricsmgr"]
HEAVY = ["skein", "grpc", "pyspark", "pandas", "pyarrow", "matplotlib"]


def test_runtime_processes_do_not_import_skein_or_the_report_stack():
    code = (f"import sys\nfor m in {RUNTIME!r}: __import__(m)\n"
            f"print(','.join(sorted(h for h in {HEAVY!r} if h in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"runtime processes import {out}"


def test_the_application_driver_imports_skein_only_to_shut_down():
    code = "import sys, squall.yarn.driver\nprint('skein' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
