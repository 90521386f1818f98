"""Helpers of the UI tests: ``squall`` commands and a real ``squall ui`` process with one SQUALL_HOME, real
HTTP requests, and the ``local`` fixture (tests/ui/conftest.py makes it available)."""
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from squall.testing import wait_until  # noqa: F401  (the UI tests import it from here too)
from squall.testing.processes import processes_under

HERE = os.path.dirname(os.path.abspath(__file__))

TOPOLOGY = os.path.join(HERE, "topologies", "ui_words.py")
TOKEN = "ui-test-token"


class Squall:
    """``squall`` commands and a ``squall ui`` process, all with one SQUALL_HOME (and config file)."""

    def __init__(self, home, config_path=None):
        self.home = str(home)
        self.env = {**os.environ, "SQUALL_HOME": self.home}
        self.options = ["--config-path", config_path] if config_path else []
        self.ui = None
        self.url = None

    def run(self, *argv, expect=0, timeout=120):
        done = subprocess.run([sys.executable, "-m", "squall.cli", *argv, *self.options], env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        assert done.returncode == expect, f"squall {' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return done

    def start_ui(self, *extra):
        self.ui = subprocess.Popen([sys.executable, "-m", "squall.cli", "ui", "--port", "0", "--config-property",
                                    f"squall.ui.token={TOKEN}", *extra, *self.options], env=self.env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.ui.stdout.readline()
        assert line.startswith("squall ui: http://"), line + self.ui.stderr.read()
        self.url = line.split()[2]
        return self.url

    def get(self, path, expect=200):
        return request(self.url, "GET", path, expect=expect)

    def post(self, path, body=None, token=TOKEN, expect=200):
        return request(self.url, "POST", path, body, token, expect)

    def processes(self):
        return processes_under(self.home)

    def finish(self):
        """Kill the topologies still running, then ``close``."""
        try:
            for row in self.get("/api/v1/topology/summary")["topologies"]:
                self.run("kill", row["name"])
        finally:
            self.close()

    def close(self):
        if self.ui is not None:
            self.ui.terminate()
            self.ui.wait(timeout=15)
            self.ui.stdout.close()
            self.ui.stderr.close()
        leftovers = self.processes()
        for p in leftovers:
            p.kill()
        assert not leftovers, f"processes left running: {[p.info['cmdline'] for p in leftovers]}"


def request(base, method, path, body=None, token=None, expect=200):
    """``(status, JSON or text)`` of a real HTTP request; asserts the status."""
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base.rstrip("/") + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=90) as resp:
            status, raw, kind = resp.status, resp.read(), resp.headers.get("content-type", "")
    except urllib.error.HTTPError as e:
        status, raw, kind = e.code, e.read(), e.headers.get("content-type", "")
    payload = json.loads(raw) if kind.startswith("application/json") else raw.decode()
    assert status == expect, f"{method} {path}: {status} {payload}"
    return payload


@pytest.fixture(scope="package")
def local(tmp_path_factory):
    """ui_words running on the local cluster, and ``squall ui`` serving it."""
    squall = Squall(tmp_path_factory.mktemp("ui-local"))
    squall.reports = os.path.join(squall.home, "reports")  # where the UI looks for capacity reports
    squall.run("submit", TOPOLOGY)
    squall.start_ui("--config-property", f"squall.ui.reports.dir={squall.reports}")
    yield squall
    squall.finish()
