"""Failing fast on the client side: missing tools, missing configuration, an unreachable ResourceManager."""
import os
import socket
import stat
import time
import xml.etree.ElementTree as ET

import pytest

from squall.cli import main
from squall.yarn.errors import YarnError
from squall.yarn.hadoop import HadoopConf, client_tools, limited_conf_dir, probe

TOPOLOGY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "word_count.py")


def site(path, **props):
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items())
    path.write_text(f"<?xml version='1.0'?><configuration>{body}</configuration>")


def tool(folder, name):
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(folder)


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def hadoop(tmp_path):
    """A client machine with yarn and java on PATH and a Hadoop configuration pointing at a dead RM."""
    bin_dir = tool(tmp_path / "bin", "yarn")
    tool(tmp_path / "bin", "java")
    conf = tmp_path / "conf"
    conf.mkdir()
    site(conf / "yarn-site.xml", **{"yarn.resourcemanager.hostname": "127.0.0.1",
                                    "yarn.resourcemanager.address": f"${{yarn.resourcemanager.hostname}}:{closed_port()}"})
    site(conf / "core-site.xml", **{"fs.defaultFS": "hdfs://nn:8020", "ipc.client.connect.max.retries": "50"})
    return {"PATH": bin_dir, "HADOOP_CONF_DIR": str(conf)}


def test_each_missing_tool_is_named(hadoop, tmp_path):
    assert client_tools(hadoop).conf_dir == hadoop["HADOOP_CONF_DIR"]
    with pytest.raises(YarnError, match="`yarn` command on PATH"):
        client_tools({**hadoop, "PATH": tool(tmp_path / "only-java", "java")})
    with pytest.raises(YarnError, match="HADOOP_CONF_DIR is not set"):
        client_tools({"PATH": hadoop["PATH"]})
    with pytest.raises(YarnError, match="has no yarn-site.xml"):
        client_tools({**hadoop, "HADOOP_CONF_DIR": str(tmp_path)})
    with pytest.raises(YarnError, match="needs `java`.*JAVA_HOME=/nowhere has no bin/java"):
        client_tools({**hadoop, "JAVA_HOME": "/nowhere"})


def test_submit_without_yarn_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SQUALL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", "/nonexistent")
    cfg = tmp_path / "cluster.yaml"
    cfg.write_text("squall.yarn.python: /opt/squall/bin/python\nsquall.runtime.bind.host: 0.0.0.0\n")
    assert main(["submit", TOPOLOGY, "--cluster", "yarn", "--config-path", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "`yarn` command on PATH" in err and "Traceback" not in err
    assert not os.path.exists(tmp_path / "home" / "topologies"), "a refused submit wrote a run folder"


def test_unreachable_resource_manager_is_named_within_the_timeout(hadoop):
    conf = HadoopConf.read(hadoop["HADOOP_CONF_DIR"])
    address = conf.rm_addresses()[0]
    assert address.startswith("127.0.0.1:")  # ${yarn.resourcemanager.hostname} expanded
    start = time.monotonic()
    with pytest.raises(YarnError, match=f"cannot reach the YARN ResourceManager within 2s.*{address}"):
        probe([address], timeout=2)
    assert time.monotonic() - start < 10


def test_ha_resource_managers_and_web_addresses(tmp_path):
    site(tmp_path / "yarn-site.xml", **{
        "yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "rm1,rm2",
        "yarn.resourcemanager.hostname.rm1": "master1", "yarn.resourcemanager.hostname.rm2": "master2",
        "yarn.resourcemanager.webapp.address.rm2": "master2:18088"})
    conf = HadoopConf.read(str(tmp_path))
    assert conf.rm_addresses() == ["master1:8032", "master2:8032"]
    assert conf.rm_web_urls() == ["http://master1:8088", "http://master2:18088"]


def test_limited_configuration_bounds_the_driver_retries(hadoop, tmp_path):
    dest = limited_conf_dir(hadoop["HADOOP_CONF_DIR"], str(tmp_path / "limited"), timeout=20)
    core = HadoopConf.read(dest, ("core-site.xml",))
    yarn = HadoopConf.read(dest, ("yarn-site.xml",))
    assert core.get("ipc.client.connect.max.retries") == "1"  # replaced, not duplicated
    assert core.get("fs.defaultFS") == "hdfs://nn:8020"  # the rest is kept
    assert yarn.get("yarn.resourcemanager.connect.max-wait.ms") == "20000"
    names = [p.findtext("name") for p in ET.parse(os.path.join(dest, "core-site.xml")).getroot()]
    assert names.count("ipc.client.connect.max.retries") == 1
    # the original is untouched
    assert HadoopConf.read(hadoop["HADOOP_CONF_DIR"]).get("ipc.client.connect.max.retries") == "50"


def test_kerberos_principal_and_keytab_go_together(tmp_path):
    from squall.conf import base_config
    from squall.yarn.client import kerberos

    keytab = tmp_path / "squall.keytab"
    keytab.write_bytes(b"")
    config = dict(base_config())
    assert kerberos(config) == {}
    assert kerberos({**config, "squall.yarn.principal": "squall@EXAMPLE.COM",
                     "squall.yarn.keytab": str(keytab)}) == {"principal": "squall@EXAMPLE.COM",
                                                             "keytab": str(keytab)}
    with pytest.raises(YarnError, match="go together"):
        kerberos({**config, "squall.yarn.principal": "squall@EXAMPLE.COM"})
