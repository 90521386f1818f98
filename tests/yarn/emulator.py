"""Run a Skein application spec on this machine as YARN's NodeManager and Skein's master would.

For every service instance (and the master's script) it:

- makes a fresh container working directory and a log directory;
- localises each of the service's ``files``: an archive (by Skein's ``type``)
  is unpacked into a directory named by its key, a file is copied under its
  key (YARN links it from its private cache), mode 0600;
- writes the script to ``.skein.sh`` and runs ``bash .skein.sh`` in the
  working directory, in its own process group, with output to
  ``<log dir>/<service>.log`` and only the environment YARN and Skein set:
  the service's ``env``, ``SKEIN_APPMASTER_ADDRESS``, ``SKEIN_APPLICATION_ID``,
  ``SKEIN_RESOURCE_MEMORY``, ``SKEIN_RESOURCE_VCORES``, ``SKEIN_CONTAINER_ID``
  (``<service>_<instance>``), ``CONTAINER_ID``, ``NM_HOST``, ``NM_PORT``,
  ``NM_HTTP_PORT``, ``LOCAL_DIRS``, ``LOG_DIRS``, ``PWD``, ``USER``, ``HOME``,
  and a bare ``PATH`` (``/usr/bin:/bin``: no virtualenv is active);
- relaunches a container that exits non-zero or is killed by a signal other
  than ours (FAILED; ``max_restarts: -1``) as a new instance number with a
  new container id; one that exits 0 (SUCCEEDED) or that it killed
  (``kill_container``: KILLED) is not relaunched;
- ends the application when the master's script exits (Skein's driver
  semantics), stopping every container: SIGTERM to its process group, SIGKILL
  after 250 ms (``yarn.nodemanager.sleep-delay-before-sigkill.ms``).

Where it differs from YARN and Skein: everything runs on this host as this
user, with no resource enforcement (memory limits, cgroups) and no
scheduling (every request is granted at once, placement hints are ignored);
files are localised from local paths, not uploaded to HDFS and downloaded by
the localizer; there is no application master process, so the master's gRPC
address answers nothing (``ApplicationClient.from_current()`` fails and the
driver falls back to its exit status) and no Kerberos, tokens or TLS
certificates exist; logs are not aggregated; ``depends`` and ``node_label``
are ignored.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tarfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from typing import Optional
from urllib.parse import urlparse

import psutil
import skein

SIGKILL_DELAY = 0.25
MASTER = "skein-master"


@dataclass
class Container:
    service: str
    instance: int
    yarn_id: str
    workdir: str
    log_dir: str
    popen: Optional[object] = None
    state: str = "RUNNING"  # RUNNING | SUCCEEDED | FAILED | KILLED

    @property
    def skein_id(self) -> str:
        return f"{self.service}_{self.instance}"


@dataclass
class EmulatedApplication:
    spec_file: str
    root: str
    app_id: str = "application_1700000000000_0001"
    containers: list = field(default_factory=list)
    final_status: Optional[str] = None

    def __post_init__(self) -> None:
        self.spec = skein.ApplicationSpec.from_file(self.spec_file)
        self._next_instance: dict = {}
        self._next_container = 1
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._monitor, daemon=True)

    # ------------------------------------------------------------------ launching
    def start(self) -> None:
        self._launch(MASTER, self.spec.master.script, self.spec.master.files, self.spec.master.env,
                     self.spec.master.resources)
        for name, service in sorted(self.spec.services.items()):
            for _ in range(service.instances):
                self.add_container(name)
        self._thread.start()

    def add_container(self, service: str) -> Container:
        s = self.spec.services[service]
        return self._launch(service, s.script, s.files, s.env, s.resources)

    def _launch(self, service: str, script: str, files: dict, env: dict, resources: object) -> Container:
        with self._lock:
            instance = self._next_instance.get(service, 0)
            self._next_instance[service] = instance + 1
            yarn_id = f"container_{self.app_id[len('application_'):]}_01_{self._next_container:06d}"
            self._next_container += 1
        workdir = os.path.join(self.root, "nm-local", self.app_id, yarn_id)
        log_dir = os.path.join(self.root, "nm-logs", self.app_id, yarn_id)
        os.makedirs(workdir)
        os.makedirs(log_dir)
        for key, f in files.items():
            _localise(f, os.path.join(workdir, key))
        with open(os.path.join(workdir, ".skein.sh"), "w") as out:
            out.write(script)
        container = Container(service, instance, yarn_id, workdir, log_dir)
        environment = {
            **env,
            "SKEIN_APPMASTER_ADDRESS": "127.0.0.1:1",  # no master process: nothing answers
            "SKEIN_APPLICATION_ID": self.app_id,
            "SKEIN_RESOURCE_MEMORY": str(resources.memory),
            "SKEIN_RESOURCE_VCORES": str(resources.vcores),
            "CONTAINER_ID": yarn_id, "NM_HOST": "127.0.0.1", "NM_PORT": "45454", "NM_HTTP_PORT": "8042",
            "LOCAL_DIRS": os.path.join(self.root, "nm-local"), "LOG_DIRS": log_dir, "PWD": workdir,
            "USER": os.environ.get("USER", "squall"), "HOME": workdir, "PATH": "/usr/bin:/bin",
        }
        if service != MASTER:
            environment["SKEIN_CONTAINER_ID"] = container.skein_id
        with open(os.path.join(log_dir, f"{'application.driver' if service == MASTER else service}.log"),
                  "wb") as log:
            container.popen = subprocess.Popen(["bash", ".skein.sh"], cwd=workdir, env=environment, stdout=log,
                                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                               start_new_session=True)
        with self._lock:
            self.containers.append(container)
        return container

    # ------------------------------------------------------------------ operations
    def running(self, service: Optional[str] = None) -> list:
        with self._lock:
            return [c for c in self.containers if c.state == "RUNNING" and c.service != MASTER
                    and (service is None or c.service == service)]

    def find(self, yarn_id: str) -> Container:
        with self._lock:
            return next(c for c in self.containers if c.yarn_id == yarn_id)

    def kill_container(self, skein_id: str) -> None:
        """Skein's ``kill_container``: KILLED, not relaunched."""
        with self._lock:
            c = next(c for c in self.containers if c.skein_id == skein_id and c.state == "RUNNING")
            c.state = "KILLED"
        _stop_group(c.popen)

    def sigkill(self, yarn_id: str) -> None:
        """The process group dies (a crash, the OOM killer): FAILED, relaunched."""
        os.killpg(self.find(yarn_id).popen.pid, signal.SIGKILL)

    def finished(self) -> bool:
        return self.final_status is not None and not any(c.popen.poll() is None for c in self.containers)

    def shutdown(self, status: str = "KILLED") -> None:
        with self._lock:
            if self.final_status is None:
                self.final_status = status
            live = [c for c in self.containers if c.state == "RUNNING"]
            for c in live:
                c.state = "KILLED"
        for c in live:
            _stop_group(c.popen)

    def close(self) -> None:
        self.shutdown()
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    # ------------------------------------------------------------------ the node manager's loop
    def _monitor(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                exited = [c for c in self.containers if c.state == "RUNNING" and c.popen.poll() is not None]
                for c in exited:
                    c.state = "SUCCEEDED" if c.popen.returncode == 0 else "FAILED"
            for c in exited:
                if c.service == MASTER:
                    self.shutdown("SUCCEEDED" if c.state == "SUCCEEDED" else "FAILED")
                elif c.state == "FAILED" and self.final_status is None:
                    self.add_container(c.service)  # max_restarts -1: always relaunched, new instance number
            if self.final_status is None and not self.running() and any(
                    c.service != MASTER for c in self.containers):
                self.shutdown("SUCCEEDED")  # every service finished
            time.sleep(0.1)


def _localise(f: skein.File, dest: str) -> None:
    source = urlparse(f.source).path
    if f.type == skein.model.FileType.ARCHIVE:
        os.makedirs(dest)
        if source.endswith(".zip"):
            with zipfile.ZipFile(source) as z:
                z.extractall(dest)
        else:
            with tarfile.open(source) as tar:
                tar.extractall(dest)
    else:
        shutil.copyfile(source, dest)
        os.chmod(dest, 0o600)


def _stop_group(popen: subprocess.Popen) -> None:
    """YARN's container stop: SIGTERM to the group, SIGKILL after the delay."""
    try:
        os.killpg(popen.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        popen.wait(timeout=SIGKILL_DELAY)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(popen.pid, signal.SIGKILL)  # the whole group: what the script started too
    except ProcessLookupError:
        pass
    popen.wait()


def group_alive(popen: object) -> bool:
    """Any process left in the container's process group."""
    for p in psutil.process_iter(["status"]):
        try:
            if os.getpgid(p.pid) == popen.pid and p.info["status"] != psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return False
