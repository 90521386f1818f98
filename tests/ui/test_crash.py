"""An exception that ends a task (raised in user code, caught nowhere) is kept with its time and traceback,
reaches the topology master before the executor restarts the task, and shows with the restart."""
import os

from ui_harness import HERE, Squall, wait_until


def test_an_uncaught_error_is_reported_before_the_task_restarts(tmp_path):
    squall = Squall(tmp_path / "home")
    marker = tmp_path / "raised"
    squall.run("submit", os.path.join(HERE, "topologies", "ui_crash.py"), "--config-property",
               f"ui.marker={marker}")
    squall.start_ui()
    try:
        def kept():
            c = squall.get("/api/v1/topology/ui_crash/component/fragile?window=60s")
            return c if c["errors"] and c["instances"][0]["restarts"] == 1 and c["instances"][0]["state"] == "up" \
                else None
        c = wait_until(kept, timeout=60, what="the error and the restart")
        assert marker.exists()
        [error] = c["errors"]
        assert error["where"] == "uncaught: the task exited"
        assert error["error"] == "RuntimeError: cannot take 'squall' the first time"
        assert "ui_crash.py" in error["traceback"] and "in process" in error["traceback"]
        assert c["summary"]["error_count"] == 1
        squall.run("kill", "ui_crash")
    finally:
        squall.close()
