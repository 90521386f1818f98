"""The client side of a Hadoop installation: tools, configuration, ResourceManager addresses.

Skein's client starts a Java driver that needs ``java``, the ``yarn`` command
(``yarn classpath --glob``) and the Hadoop configuration (``HADOOP_CONF_DIR``);
without them it fails with a traceback, and against an unreachable
ResourceManager its driver retries for over five minutes. This module checks
the three first and says in one line what is missing, reads the ``*-site.xml``
files Squall needs (ResourceManager addresses with HA ids, maximum
allocations), probes the ResourceManager within
``squall.yarn.connect.timeout.secs``, and writes a copy of the configuration
whose IPC connect limits make the driver give up within that time too.
"""
from __future__ import annotations

import math
import os
import re
import shutil
import socket
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Mapping, Optional

from squall.yarn.errors import YarnError

# Hadoop's defaults (yarn-default.xml).
RM_PORT = 8032
RM_WEBAPP_PORT = 8088
RM_WEBAPP_HTTPS_PORT = 8090
_VARIABLE = re.compile(r"\$\{([^}]+)\}")


@dataclass(frozen=True)
class ClientTools:
    yarn: str  # the yarn command
    java: str
    conf_dir: str  # HADOOP_CONF_DIR


def client_tools(env: Optional[Mapping[str, str]] = None) -> ClientTools:
    """What Skein's client needs on this machine, or a YarnError saying what is missing and how to set it."""
    env = os.environ if env is None else env
    path = env.get("PATH", "")
    yarn = shutil.which("yarn", path=path)
    if yarn is None:
        raise YarnError("--cluster yarn needs Hadoop's `yarn` command on PATH (install the Hadoop client and "
                        "add its bin/ to PATH)")
    conf_dir = env.get("HADOOP_CONF_DIR") or (os.path.join(env["HADOOP_HOME"], "etc", "hadoop")
                                               if env.get("HADOOP_HOME") else "")
    if not conf_dir or not os.path.isfile(os.path.join(conf_dir, "yarn-site.xml")):
        where = f"{conf_dir} has no yarn-site.xml" if conf_dir else "HADOOP_CONF_DIR is not set"
        raise YarnError(f"--cluster yarn needs the cluster's Hadoop configuration: {where} (set HADOOP_CONF_DIR "
                        "to the folder with core-site.xml and yarn-site.xml)")
    java = os.path.join(env["JAVA_HOME"], "bin", "java") if env.get("JAVA_HOME") else shutil.which("java", path=path)
    if java is None or not os.access(java, os.X_OK):
        raise YarnError("--cluster yarn needs `java` for Skein's driver: install a JRE, or set JAVA_HOME"
                        + (f" (JAVA_HOME={env['JAVA_HOME']} has no bin/java)" if env.get("JAVA_HOME") else ""))
    return ClientTools(yarn, java, conf_dir)


class HadoopConf:
    """Properties of the ``*-site.xml`` files of a configuration folder, with ``${var}`` expanded."""

    def __init__(self, properties: Mapping[str, str], conf_dir: str = ""):
        self.properties = dict(properties)
        self.conf_dir = conf_dir

    @classmethod
    def read(cls, conf_dir: str, files: tuple = ("core-site.xml", "yarn-site.xml", "capacity-scheduler.xml")
             ) -> "HadoopConf":
        properties: dict = {}
        for name in files:
            path = os.path.join(conf_dir, name)
            if os.path.isfile(path):
                properties.update(read_site(path))
        return cls(properties, conf_dir)

    def get(self, key: str, default: Optional[str] = None) -> Optional[str]:
        value = self.properties.get(key)
        if value is None:
            return default
        for _ in range(10):  # nested references, bounded
            expanded = _VARIABLE.sub(lambda m: self.properties.get(m.group(1), os.environ.get(m.group(1), "")),
                                     value)
            if expanded == value:
                break
            value = expanded
        return value.strip()

    def rm_ids(self) -> list:
        """ResourceManager ids of an HA pair (``yarn.resourcemanager.ha.rm-ids``), or [None]."""
        if (self.get("yarn.resourcemanager.ha.enabled") or "false").lower() != "true":
            return [None]
        ids = [i.strip() for i in (self.get("yarn.resourcemanager.ha.rm-ids") or "").split(",") if i.strip()]
        return ids or [None]

    def _rm_value(self, key: str, rm_id: Optional[str]) -> Optional[str]:
        return self.get(f"{key}.{rm_id}") if rm_id else self.get(key)

    def rm_addresses(self) -> list:
        """``host:port`` of every ResourceManager's client (IPC) endpoint."""
        out = []
        for rm_id in self.rm_ids():
            host = self._rm_value("yarn.resourcemanager.hostname", rm_id) or "0.0.0.0"
            out.append(self._rm_value("yarn.resourcemanager.address", rm_id) or f"{host}:{RM_PORT}")
        return out

    def rm_web_urls(self) -> list:
        """Web (REST) base URL of every ResourceManager, https when ``yarn.http.policy`` is HTTPS_ONLY."""
        https = (self.get("yarn.http.policy") or "HTTP_ONLY").upper() == "HTTPS_ONLY"
        key, port = (("yarn.resourcemanager.webapp.https.address", RM_WEBAPP_HTTPS_PORT) if https
                     else ("yarn.resourcemanager.webapp.address", RM_WEBAPP_PORT))
        out = []
        for rm_id in self.rm_ids():
            host = self._rm_value("yarn.resourcemanager.hostname", rm_id) or "0.0.0.0"
            address = self._rm_value(key, rm_id) or f"{host}:{port}"
            out.append(f"{'https' if https else 'http'}://{address}")
        return out

    def max_allocation(self, queue: str) -> tuple:
        """``(memory_mb, vcores, source)``: the largest container the queue may get, or (None, None, "")
        when the configuration does not say. A capacity-scheduler queue's own limit wins over the cluster's."""
        for prefix, source in ((f"yarn.scheduler.capacity.{queue_path(queue)}.", f"queue {queue!r} "
                                "(capacity-scheduler.xml)"), ("yarn.scheduler.", "yarn-site.xml")):
            mb, vcores = self.get(prefix + "maximum-allocation-mb"), self.get(prefix + "maximum-allocation-vcores")
            if mb or vcores:
                return (int(mb) if mb else None, int(vcores) if vcores else None, source)
        return None, None, ""


def queue_path(queue: str) -> str:
    """Capacity scheduler property path of a queue: ``default`` is ``root.default``."""
    return queue if queue.startswith("root.") or queue == "root" else f"root.{queue}"


def read_site(path: str) -> dict:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        raise YarnError(f"cannot read the Hadoop configuration file {path}: {e}") from e
    properties = {}
    for prop in root.iter("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name:
            properties[name.strip()] = value or ""
    return properties


def probe(addresses: list, timeout: float, what: str = "the YARN ResourceManager") -> str:
    """The first ``host:port`` of ``addresses`` that accepts a TCP connection within ``timeout``
    (shared between them), or a YarnError naming every address tried."""
    errors = []
    share = timeout / max(1, len(addresses))
    for address in addresses:
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=share):
                return address
        except (OSError, ValueError) as e:
            errors.append(f"{address}: {e}")
    raise YarnError(f"cannot reach {what} within {timeout:g}s (squall.yarn.connect.timeout.secs): "
                    + "; ".join(errors))


def ipc_limits(timeout: float) -> dict:
    """Hadoop properties that bound how long a client retries an unreachable ResourceManager."""
    ms = int(timeout * 1000)
    retries = max(1, math.ceil(timeout / 2) - 1)
    return {
        "core-site.xml": {"ipc.client.connect.max.retries": "1", "ipc.client.connect.timeout": str(min(ms, 2000)),
                          "ipc.client.connect.max.retries.on.timeouts": "1",
                          "ipc.client.connect.retry.interval": "1000"},
        "yarn-site.xml": {"yarn.resourcemanager.connect.max-wait.ms": str(ms),
                          "yarn.resourcemanager.connect.retry-interval.ms": str(min(ms, 1000 * retries)),
                          "yarn.client.failover-max-attempts": str(retries)},
    }


def limited_conf_dir(conf_dir: str, dest: str, timeout: float) -> str:
    """A copy of ``conf_dir`` in ``dest`` whose IPC limits give up on an unreachable
    ResourceManager after about ``timeout`` seconds; its path (use it as HADOOP_CONF_DIR)."""
    shutil.copytree(conf_dir, dest, dirs_exist_ok=True)
    for name, overrides in ipc_limits(timeout).items():
        path = os.path.join(dest, name)
        if os.path.isfile(path):
            tree = ET.parse(path)
            root = tree.getroot()
        else:
            root = ET.Element("configuration")
            tree = ET.ElementTree(root)
        for prop in list(root.iter("property")):
            if (prop.findtext("name") or "").strip() in overrides:
                root.remove(prop)
        for key, value in overrides.items():
            prop = ET.SubElement(root, "property")
            ET.SubElement(prop, "name").text = key
            ET.SubElement(prop, "value").text = value
        tree.write(path, encoding="utf-8", xml_declaration=True)
    return dest
