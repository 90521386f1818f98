"""Reaching the cluster from this machine: Skein's client and the ResourceManager's REST API.

``skein_client`` checks, before starting Skein's Java driver, that ``yarn``,
the Hadoop configuration and ``java`` are there and that a ResourceManager
answers within ``squall.yarn.connect.timeout.secs``; it starts the driver
with Hadoop's IPC limits set to that time (a copy of the configuration), and
with the Kerberos principal and keytab when they are configured. Skein's own
errors are translated into one-line ``YarnError``\\ s.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from typing import TYPE_CHECKING, Iterator, Mapping, Optional

from squall.yarn.errors import YarnError
from squall.yarn.hadoop import HadoopConf, client_tools, limited_conf_dir, probe
from squall.yarn.rest import RMClient

if TYPE_CHECKING:
    import skein


def kerberos(config: Mapping[str, object]) -> dict:
    """Skein client keyword arguments for a keytab login, or {} for the ticket cache."""
    principal, keytab = config["squall.yarn.principal"], config["squall.yarn.keytab"]
    if bool(principal) != bool(keytab):
        raise YarnError("squall.yarn.principal and squall.yarn.keytab go together: set both for a keytab login, "
                        "or neither to use the ticket cache (kinit)")
    if keytab and not os.path.isfile(os.path.expanduser(keytab)):
        raise YarnError(f"squall.yarn.keytab={keytab!r}: no such file")
    return {"principal": principal, "keytab": os.path.expanduser(keytab)} if keytab else {}


def hadoop_conf() -> Optional[HadoopConf]:
    """The client's Hadoop configuration, when ``HADOOP_CONF_DIR`` names one."""
    conf_dir = os.environ.get("HADOOP_CONF_DIR")
    if conf_dir and os.path.isfile(os.path.join(conf_dir, "yarn-site.xml")):
        return HadoopConf.read(conf_dir)
    return None


def rm_client(config: Mapping[str, object]) -> Optional[RMClient]:
    """The ResourceManager's REST API at ``squall.yarn.rm.url`` or the Hadoop configuration's
    addresses; None when neither says where it is."""
    timeout = float(config["squall.yarn.connect.timeout.secs"])
    if config["squall.yarn.rm.url"]:
        return RMClient([config["squall.yarn.rm.url"]], timeout)
    conf = hadoop_conf()
    return RMClient(conf.rm_web_urls(), timeout) if conf is not None else None


def check_reachable(config: Mapping[str, object]) -> None:
    """Fail fast: the client tools are there and a ResourceManager accepts connections."""
    tools = client_tools()
    probe(HadoopConf.read(tools.conf_dir).rm_addresses(), float(config["squall.yarn.connect.timeout.secs"]))


@contextlib.contextmanager
def skein_client(config: Mapping[str, object]) -> Iterator[skein.Client]:
    """A started ``skein.Client`` (its driver stops when the block ends)."""
    import skein

    tools = client_tools()
    timeout = float(config["squall.yarn.connect.timeout.secs"])
    probe(HadoopConf.read(tools.conf_dir).rm_addresses(), timeout)
    login = kerberos(config)
    with tempfile.TemporaryDirectory(prefix="squall-hadoop-conf-") as tmp:
        conf_dir = limited_conf_dir(tools.conf_dir, os.path.join(tmp, "conf"), timeout)
        previous = os.environ.get("HADOOP_CONF_DIR")
        os.environ["HADOOP_CONF_DIR"] = conf_dir  # Skein's driver takes the classpath from `yarn classpath`
        try:
            client = skein.Client(log=False, **login)
        except (skein.exceptions.SkeinError, OSError, ValueError) as e:
            raise YarnError(f"cannot start Skein's client (HADOOP_CONF_DIR={tools.conf_dir}): {e}") from e
        finally:
            if previous is None:
                os.environ.pop("HADOOP_CONF_DIR", None)
            else:
                os.environ["HADOOP_CONF_DIR"] = previous
        try:
            yield client
        finally:
            client.close()


@contextlib.contextmanager
def application(config: Mapping[str, object], app_id: str) -> Iterator[skein.ApplicationClient]:
    """A ``skein.ApplicationClient`` of running application ``app_id``."""
    import skein

    with skein_client(config) as client:
        try:
            app = client.connect(app_id, wait=False)
        except (skein.exceptions.SkeinError, KeyError, ValueError) as e:
            raise YarnError(f"cannot reach application {app_id}'s master: {e}") from e
        try:
            yield app
        finally:
            app.close()
