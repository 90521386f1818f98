"""The pipe an instance process says it is initialized on (runtime/readiness.py), with real child processes."""
import subprocess
import sys

from squall.runtime.readiness import ReadyPipe

SAYS_READY = ("import os; from squall.runtime.readiness import take_ready_fd, signal_ready; take_ready_fd(); "
              "assert 'SQUALL_READY_FD' not in os.environ; signal_ready(); signal_ready()")


def run(pipe, code):
    child = subprocess.Popen([sys.executable, "-c", code], pass_fds=[pipe.write_fd], env=pipe.child_env())
    pipe.started()
    assert child.wait(timeout=30) == 0


def test_a_process_that_says_it_is_initialized_is_read_as_ready():
    pipe = ReadyPipe()
    assert pipe.poll() is None  # nothing said yet, the pipe still open
    run(pipe, SAYS_READY)
    assert pipe.poll() is True
    assert pipe.poll() is False  # one byte, then the end: saying it twice wrote it once
    pipe.close()


def test_a_process_that_exits_without_saying_it_closes_the_pipe():
    pipe = ReadyPipe()
    run(pipe, "pass")
    assert pipe.poll() is False
    pipe.close()


def test_a_process_its_executor_did_not_start_says_nothing():
    code = "from squall.runtime.readiness import take_ready_fd, signal_ready; take_ready_fd(); signal_ready()"
    assert subprocess.run([sys.executable, "-c", code], timeout=30).returncode == 0
