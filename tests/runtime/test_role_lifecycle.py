"""One lifecycle for the roles' background work: a critical task or thread that dies is logged, the role
closes, and its process exits non-zero (so its executor restarts it); stopping is one status."""
import asyncio
import logging
import subprocess
import sys
import textwrap
import threading

from squall.runtime.lifecycle import FAILED_EXIT, Lifecycle, Status, serve_role


def test_a_critical_task_that_raises_stops_the_role_with_exit_status_1(caplog):
    life = Lifecycle("test role")
    seen = []

    async def ticks():
        while True:
            await asyncio.sleep(0.01)

    async def broken():
        await asyncio.sleep(0.05)
        raise ValueError("an invariant broke")

    async def serve():
        life.spawn(ticks(), "ticks")
        life.spawn(broken(), "broken")
        await life.wait_stopping()
        seen.append(life.status)

    with caplog.at_level(logging.ERROR, logger="squall.runtime.lifecycle"):
        assert serve_role(life, serve) == FAILED_EXIT
    assert seen == [Status.STOPPING] and life.status is Status.STOPPED
    assert life.failure == "broken: ValueError('an invariant broke')"
    record = next(r for r in caplog.records if "critical task 'broken' died" in r.getMessage())
    assert record.exc_info[1].args == ("an invariant broke",)


def test_a_stop_is_exit_status_0_and_a_failed_non_critical_task_is_only_logged(caplog):
    life = Lifecycle("test role")

    async def send():
        raise ConnectionResetError("one metrics row lost")

    async def serve():
        task = life.spawn(send(), "metrics send", critical=False)
        await asyncio.gather(task, return_exceptions=True)
        threading.Thread(target=life.stop).start()  # a stop from another thread, as SIGTERM's handler
        await life.wait_stopping()

    with caplog.at_level(logging.ERROR, logger="squall.runtime.lifecycle"):
        assert serve_role(life, serve) == 0
    assert life.failure is None and life.status is Status.STOPPED
    assert any("background task 'metrics send' failed" in r.getMessage() for r in caplog.records)
    life.stop()  # idempotent, once stopped too
    assert life.status is Status.STOPPED


STREAM_MANAGER = textwrap.dedent("""
    import logging, sys
    from squall.runtime.lifecycle import serve_role
    from squall.runtime.protocol import listen_socket
    from squall.runtime.stmgr import StreamManager

    logging.basicConfig(filename=sys.argv[1], level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    def locate_tmaster():
        raise RuntimeError("the topology master's locator broke")

    sm = StreamManager("t", "secret", 1, "127.0.0.1", spouts=set(), high_bytes=1 << 20, low_bytes=1 << 19,
                       max_frame=1 << 20, tmaster_locator=locate_tmaster)
    listener = listen_socket("127.0.0.1")
    sys.exit(serve_role(sm.lifecycle, lambda: sm.serve(listener)))
""")


def test_a_stream_manager_process_whose_critical_task_dies_exits_1_with_the_traceback_in_its_log(tmp_path):
    log_file = tmp_path / "stmgr.log"
    process = subprocess.run([sys.executable, "-c", STREAM_MANAGER, str(log_file)], timeout=120)
    text = log_file.read_text()
    assert process.returncode == FAILED_EXIT, text
    assert "stream manager: critical task 'connect to the topology master' died" in text
    assert "Traceback (most recent call last):" in text
    assert "RuntimeError: the topology master's locator broke" in text
    assert "stream manager stopped: critical task connect to the topology master: RuntimeError(" in text
