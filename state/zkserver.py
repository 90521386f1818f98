"""A real ZooKeeper server on a free loopback port, for tests and local trials.

Uses Debian's ``zookeeper`` package (``/usr/share/java/zookeeper.jar``) and
Java. ``stop``/``start`` on the same data directory simulate a server outage:
clients see connection loss, and sessions expire if it lasts longer than
their timeout.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Optional

from squall.errors import SquallError

ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"


class ZooKeeperUnavailable(SquallError):
    """Java or Debian's zookeeper package is missing."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ZooKeeperServer:
    def __init__(self, data_dir: Optional[str] = None, port: Optional[int] = None):
        if not os.path.exists(ZOOKEEPER_JAR) or shutil.which("java") is None:
            raise ZooKeeperUnavailable(
                f"a ZooKeeper server needs Java and Debian's zookeeper package ({ZOOKEEPER_JAR})"
            )
        self._own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="squall-zk-")
        self.port = port or free_port()
        self.process: Optional[subprocess.Popen] = None

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        config = os.path.join(self.data_dir, "zoo.cfg")
        with open(config, "w") as f:
            f.write(
                f"tickTime=500\ndataDir={self.data_dir}\nclientPort={self.port}\n"
                "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                "4lw.commands.whitelist=ruok\nminSessionTimeout=1000\nmaxSessionTimeout=30000\n"
            )
        log = open(os.path.join(self.data_dir, "server.log"), "ab")
        self.process = subprocess.Popen(
            ["java", "-Xmx256m", "-cp", f"/etc/zookeeper/conf:{ZOOKEEPER_JAR}", MAIN_CLASS, config],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ZooKeeperUnavailable(f"ZooKeeper exited; see {self.data_dir}/server.log")
            if self._ruok():
                return
            time.sleep(0.1)
        self.stop()
        raise ZooKeeperUnavailable(f"ZooKeeper did not answer on {self.hosts} within {timeout:g}s")

    def _ruok(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"ruok")
                return s.recv(4) == b"imok"
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def close(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)


def expire_session(hosts: str, client_id: tuple, timeout: float = 10.0) -> None:
    """Expire a live ZooKeeper session for real, as kazoo's test harness used to.

    A second client joins the session (``client_id`` is the owner's
    ``(session id, password)``: ``KazooClient.client_id``) and closes it: the
    server ends the session, removes its ephemeral nodes and tells watchers,
    and the owner's next contact is answered with SESSION_EXPIRED (kazoo:
    LOST).
    """
    from kazoo.client import KazooClient

    intruder = KazooClient(hosts=hosts, client_id=client_id, timeout=timeout)
    intruder.start(timeout=timeout)
    intruder.stop()
    intruder.close()
