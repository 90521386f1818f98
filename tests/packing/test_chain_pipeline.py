"""read -> parse -> enrich at 1.5 cpu each and parallelism 2 (chain_pipeline.py) packs and runs at default
settings with exact results, and ``squall pack`` says why no edge of it is chained."""
import json
import os
from collections import Counter

from chain_pipeline import topology

from squall.cli import main
from squall.packing import pack, validate_plan
from squall.testing import complete_topology
from squall.testing.words import expected, sentence

PIPELINE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chain_pipeline.py")
WHY = "cpu 1.5+1.5 > 1 core"


def test_it_packs_at_default_settings_one_process_a_task():
    plan = pack(topology.plan)
    validate_plan(topology.plan, plan)
    assert sorted(i.id.component for c in plan.containers for i in c.instances) == \
        ["enrich", "enrich", "parse", "parse", "read", "read"]
    assert all(c.resources.cpu <= 4 for c in plan.containers)  # squall.container.max.cpu's default


def test_it_runs_with_exact_results():
    n = 60
    result = complete_topology(topology, mocked={"read": [[sentence(i)] for i in range(n)]}, timeout=60)
    enriched = result.tuples("enrich")
    assert Counter(word for word, _ in enriched) == expected(n)
    assert all(length == len(word) for word, length in enriched)


def test_squall_pack_says_why_no_edge_is_chained(capsys):
    assert main(["pack", PIPELINE]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "chains:       none" in out
    assert [line for line in out if " -> " in line] == [
        f"parse -> enrich  not chained: {WHY}",
        f"read -> parse    not chained: {WHY}"]
    assert main(["pack", PIPELINE, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["chains"] == []
    assert shown["edges"] == [{"from": "parse", "to": "enrich", "chained": False, "reason": WHY},
                              {"from": "read", "to": "parse", "chained": False, "reason": WHY}]
