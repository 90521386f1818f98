"""The squall command: exit codes, one-line errors, topology files."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from squall.cli import main

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORD_COUNT = os.path.join(REPO, "examples", "word_count.py")
SQUALL = os.path.join(os.path.dirname(sys.executable), "squall")

HEADER = "from squall import Bolt, Grouping, Spout, Topology, TopologyBuilder\n"
SPOUT = "class S(Spout):\n    outputs = ['x']\n"


def topology_file(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + SPOUT + textwrap.dedent(body))
    return str(path)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_validate_summarises_components(capsys):
    code, out, err = run(capsys, "validate", WORD_COUNT)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("topology 'word_count' is valid")
    assert "sentence   spout    1  default(sentence)    -" in out
    assert "count      bolt     2  default(word,count)  split/default:fields(word)" in out
    assert lines[-1] == "3 components, 5 tasks"


def test_validate_json(capsys):
    code, out, _ = run(capsys, "validate", WORD_COUNT, "--json")
    data = json.loads(out)
    assert code == 0
    assert data["total_tasks"] == 5
    assert [c["name"] for c in data["components"]] == ["sentence", "split", "count"]


def test_config_property_of_wrong_type_exits_2_with_one_line(capsys):
    code, out, err = run(capsys, "validate", WORD_COUNT, "--config-property", "topology.max.spout.pending=abc")
    assert code == 2 and out == ""
    assert err == "squall: error: topology.max.spout.pending (--config-property): expected an integer, got 'abc' (str)\n"


def test_missing_file(capsys, tmp_path):
    code, _, err = run(capsys, "validate", str(tmp_path / "nope.py"))
    assert code == 2
    assert err == f"squall: error: topology file {tmp_path / 'nope.py'} does not exist\n"


def test_file_with_no_topology(capsys, tmp_path):
    path = topology_file(tmp_path, "t_none", "")
    code, _, err = run(capsys, "validate", path)
    assert code == 2
    assert err.startswith(f"squall: error: topology file {path} exposes no topology")
    assert err.count("\n") == 1


def test_file_with_two_topologies(capsys, tmp_path):
    path = topology_file(tmp_path, "t_two", """
        class A(Topology):
            s = S.spec()
        b = TopologyBuilder("b")
        b.add_spout("s", S)
        topology = b.build()
    """)
    code, _, err = run(capsys, "validate", path)
    assert code == 2
    assert err == f"squall: error: topology file {path} exposes 2 topologies: topology (instance), A (class); keep one\n"


def test_instance_of_dsl_class_counts_once(capsys, tmp_path):
    path = topology_file(tmp_path, "t_dsl_once", """
        class A(Topology):
            s = S.spec(par=2)
        topology = A()
    """)
    code, out, err = run(capsys, "validate", path)
    assert code == 0, err
    assert "1 components, 2 tasks" in out


def test_syntax_error_names_file_and_line(capsys, tmp_path):
    path = topology_file(tmp_path, "t_syntax", "def broken(:\n")
    code, _, err = run(capsys, "validate", path)
    assert code == 2
    assert err == f"squall: error: topology file {path}, line 4: syntax error: invalid syntax\n"


@pytest.mark.parametrize("body,said", [
    ("import sys\nsys.exit(3)\n", "called sys.exit(3) while it was imported; a topology file must only build its topology"),
    ("raise SystemExit\n", "called sys.exit(None) while it was imported; a topology file must only build its topology"),
    ("raise KeyboardInterrupt\n", "was interrupted while it was imported"),
])
def test_exit_or_interrupt_at_import_is_one_line_naming_the_file(capsys, tmp_path, body, said):
    path = topology_file(tmp_path, f"t_exit_{len(body)}", body)
    code, _, err = run(capsys, "validate", path)
    assert code == 2
    assert err == f"squall: error: topology file {path} {said}\n"


def test_validation_error_names_file_and_component(capsys, tmp_path):
    path = topology_file(tmp_path, "t_invalid", """
        b = TopologyBuilder("t")
        b.add_spout("s", S, par=-1)
        topology = b.build()
    """)
    code, _, err = run(capsys, "validate", path)
    assert code == 2
    assert err == f"squall: error: {path}: components.s.par: parallelism must be a positive integer, got -1\n"


def test_unknown_key_is_a_warning_not_an_error(capsys, tmp_path):
    path = topology_file(tmp_path, "t_warn", """
        b = TopologyBuilder("t")
        b.add_spout("s", S)
        b.set_config({"topology.worker": 2})
        topology = b.build()
    """)
    code, _, err = run(capsys, "validate", path)
    assert code == 0
    assert err == "squall: warning: config: unknown config key 'topology.worker'; did you mean 'topology.workers'?\n"


def test_config_list(capsys):
    code, out, _ = run(capsys, "config", "list")
    assert code == 0
    assert any(line.startswith("topology.max.spout.pending") and "1000" in line for line in out.splitlines())
    code, out, _ = run(capsys, "config", "list", "--json")
    keys = {k["name"]: k for k in json.loads(out)}
    assert keys["squall.packing.algorithm"]["choices"] == ["auto", "roundrobin", "rcrr", "ffd"]


def test_real_command_version_help_and_errors(tmp_path):
    version = subprocess.run([SQUALL, "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("squall 0.")
    helped = subprocess.run([SQUALL, "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "validate" in helped.stdout
    bad = subprocess.run([SQUALL, "validate", str(tmp_path / "x.py")], capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "Traceback" not in bad.stderr
    debug = subprocess.run([SQUALL, "--debug", "validate", str(tmp_path / "x.py")], capture_output=True, text=True)
    assert debug.returncode == 2 and "Traceback" in debug.stderr


def test_every_command_has_help():
    from squall.cli import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # argparse keeps them here
    for name in commands:
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args([name, "--help"])
        assert exit_.value.code == 0


def test_overrides_apply_to_one_load_only(capsys):
    code, out, _ = run(capsys, "validate", WORD_COUNT, "--json", "--config-property", "my.key=1")
    assert code == 0
    from squall.loader import load_topology_file

    assert load_topology_file(WORD_COUNT).plan.overrides == {}
