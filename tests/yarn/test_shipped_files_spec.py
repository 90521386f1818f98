"""Files shipped at submit travel to the tasks' YARN containers through Skein's file localisation: the
spec ``submit --cluster yarn --spec-out`` writes (a real ``skein.ApplicationSpec``) carries them in every
container service but the topology master's, as one archive of the run folder's copies that YARN unpacks
into ``shipped/<alias>/1/<name>``, where a task reads them."""
import os
import sys
import tarfile
from urllib.parse import urlparse

import skein

from squall.cli import main
from squall.state import Kind, LocalStateManager
from squall.yarn.spec import TMASTER_SERVICE

from e2e_harness import TOPOLOGIES


def test_the_spec_carries_the_shipped_files_in_every_container_service(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("SQUALL_HOME", str(home))
    config = tmp_path / "cluster.yaml"
    config.write_text(f"squall.runtime.bind.host: 0.0.0.0\nsquall.yarn.python: {sys.executable}\n")
    table = tmp_path / "table.txt"
    table.write_text("alpha=one\n")
    model = tmp_path / "model.bin"
    model.write_bytes(b"\1\2\3")
    spec_file = tmp_path / "spec.yaml"

    code = main(["submit", os.path.join(TOPOLOGIES, "lookup_files.py"), "--cluster", "yarn", "--spec-out",
                 str(spec_file), "--files", f"{table}#lookup", str(model), "--config-path", str(config)])
    _, err = capsys.readouterr()
    assert code == 0, err

    spec = skein.ApplicationSpec.from_file(str(spec_file))
    record = LocalStateManager(str(home / "state")).get(Kind.FILES, "lookup_files")
    assert [(f.key, f.version, f.name, f.stored) for f in record.files] == [
        ("lookup", 1, "table.txt", None), ("model.bin", 1, "model.bin", None)]
    services = [s for name, s in spec.services.items() if name != TMASTER_SERVICE]
    assert len(services) >= 2  # the container shapes and the spare one
    sources = set()
    for service in services:
        shipped = service.files["shipped"]
        assert shipped.type == skein.model.FileType.ARCHIVE
        sources.add(urlparse(shipped.source).path)
    source, = sources
    assert source.startswith(str(home)), "not staged in the run folder"
    with tarfile.open(source) as tar:  # what YARN unpacks into shipped/ in each container
        assert sorted(m.name for m in tar.getmembers() if m.isfile()) == ["lookup/1/table.txt",
                                                                         "model.bin/1/model.bin"]
        assert tar.extractfile("lookup/1/table.txt").read() == b"alpha=one\n"
        assert tar.extractfile("model.bin/1/model.bin").read() == b"\1\2\3"
    for name, files in (("the topology master's", spec.services[TMASTER_SERVICE].files),
                        ("the driver's", spec.master.files)):
        assert "shipped" not in files, f"{name} container runs no task"

    assert main(["kill", "lookup_files", "--config-path", str(config)]) == 0
