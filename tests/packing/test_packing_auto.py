"""auto, the default algorithm: never refuses what fits, never more containers
than ffd, topology.workers as a minimum, deterministic; and its repacking."""
import itertools
import json
import os
import random
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from squall.cli import main
from squall.conf import ConfigError
from squall.idl import encode, replace
from squall.packing import PackingError, pack, repack, validate_plan, with_component_config, with_parallelism
from squall.packing.auto import split
from squall.packing.counts import CountProblem, containers, first_fit, lower_bound, orderings
from squall.packing.search import Search, maximal_fillings
from test_packing_properties import SETTINGS, topologies
from packing_helpers import comp, layout, res, topo, yarn_cost

HERE = os.path.dirname(os.path.abspath(__file__))
TEN_TASKS = os.path.join(HERE, "topologies", "ten_tasks.py")
SQUALL = os.path.join(os.path.dirname(sys.executable), "squall")
SPOUT2_BOLT8 = [comp("spout", 2), comp("bolt", 8, inputs=["spout"])]


def test_ten_instances_pack_at_defaults_into_as_many_containers_as_needed():
    t = topo(SPOUT2_BOLT8)
    plan = pack(t)
    assert (plan.algorithm, plan.granularity) == ("auto", "task")
    # 0.5 cpu each, 4 - 0.35 = 3.65 cpu of room: 7 instances a container
    assert layout(plan) == [(1, ["bolt0", "bolt1", "bolt2", "bolt3", "bolt4", "bolt5", "bolt6"]),
                            (2, ["bolt7", "spout0", "spout1"])]
    assert res(plan.containers[0].resources) == (3.85, 2016, 2112)
    validate_plan(t, plan)
    with pytest.raises(PackingError, match=r"roundrobin: container 1 would need cpu 5.35 with padding, above "
                                           r"squall.container.max.cpu=4 .*or auto, rcrr or ffd"):
        pack(topo(SPOUT2_BOLT8, {"topology.workers": 1}), algorithm="roundrobin")


def test_squall_pack_packs_the_ten_task_file_at_defaults(capsys):
    code = main(["pack", TEN_TASKS])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("topology 'ten_tasks': auto packing at task granularity")
    assert [line.split()[0] for line in lines[3:5]] == ["1", "2"]
    assert "needed:       cpu 5, ram 2560 MB" in out


def test_an_instance_larger_than_a_container_is_still_refused():
    with pytest.raises(PackingError, match=r"component 'huge': one instance needs ram 20000 MB "
                                           r"\(squall.component.ram.mb\) plus 224 MB padding, more than a container "
                                           r"holds: squall.container.max.ram.mb=8192"):
        pack(topo([comp("small", 3), comp("huge", 1, ram=20000)]))


def test_roundrobin_keeps_exactly_topology_workers_or_the_fewest_that_fit():
    assert len(pack(topo(SPOUT2_BOLT8, {"topology.workers": 3}), algorithm="roundrobin").containers) == 3
    assert len(pack(topo(SPOUT2_BOLT8, {"topology.workers": 10}), algorithm="roundrobin").containers) == 10
    # unset: the fewest round-robin fits (5 + 5 instances = 2.5 cpu each)
    plan = pack(topo(SPOUT2_BOLT8), algorithm="roundrobin")
    assert [len(c.instances) for c in plan.containers] == [5, 5]


def test_storm_word_count_shape_gets_more_containers_than_topology_workers_when_it_must():
    # Storm's WordCountTopology: spout 5, split 8, count 12 on 3 workers; 25 x 0.5 cpu needs 4 containers here
    t = topo([comp("spout", 5), comp("split", 8, inputs=["spout"]), comp("count", 12, inputs=["split"])],
             {"topology.workers": 3})
    with pytest.raises(PackingError, match="roundrobin: container 1 would need cpu 4.85"):
        pack(t, algorithm="roundrobin")
    assert [len(c.instances) for c in pack(t).containers] == [7, 7, 7, 4]


def test_topology_workers_is_a_minimum_spread_evenly():
    # fits one container, asked for at least 3: dealt in turn, largest first
    t = topo([comp("a", 4), comp("b", 2, ram=512)], {"topology.workers": 3})
    plan = pack(t)
    assert layout(plan) == [(1, ["a1", "b0"]), (2, ["a2", "b1"]), (3, ["a0", "a3"])]
    assert len(pack(topo([comp("a", 4), comp("b", 2, ram=512)], {"topology.workers": 1})).containers) == 1
    with pytest.raises(PackingError, match=r"topology.workers=7 is more than the topology's 6 tasks: "
                                           "a container would be empty"):
        pack(topo([comp("a", 4), comp("b", 2)], {"topology.workers": 7}))


def test_topology_workers_splits_the_fewest_packing_when_dealing_needs_more():
    # fewest: {c2 c2} {c2 c2} {c0 c1}; dealt over 4, c2 takes all four and c0 fits none of them
    components = [comp("c0", 1, cpu=2.2, ram=2304), comp("c1", 1, cpu=0.2, ram=1024),
                  comp("c2", 4, cpu=1.8, ram=3840)]
    assert len(pack(topo(components)).containers) == 3
    plan = pack(topo(components, {"topology.workers": 4}))
    assert layout(plan) == [(1, ["c20"]), (2, ["c21"]), (3, ["c22", "c23"]), (4, ["c00", "c10"])]


def test_split_halves_the_container_with_most_instances():
    assert split([(2, 1), (1, 0)], 3) == [(1, 1), (1, 0), (1, 0)]
    assert split([(3, 3)], 4) == [(1, 1), (1, 0), (1, 1), (0, 1)]


def test_search_finds_what_every_greedy_packing_misses():
    # room 4 cpu: b b a a a | a are first fit by cpu; the optimum is a a b twice
    t = topo([comp("a", 4, cpu=1.2), comp("b", 2, cpu=1.5)], {"squall.container.max.cpu": 4.35})
    assert len(pack(t, algorithm="ffd", granularity="task").containers) == 3
    plan = pack(t)
    assert layout(plan) == [(1, ["a0", "a1", "b0"]), (2, ["a2", "a3", "b1"])]


def test_search_counts_steps_and_gives_up_deterministically():
    problem = CountProblem(sizes=((1200, 2048, 0), (1500, 2048, 0)), counts=(4, 2), room=(4000, 8000, 10000))
    order = orderings(problem)[3]
    assert lower_bound(problem) == 2
    assert Search(problem, budget=1000).fewer(2, order, steps=1000) == [(2, 1), (2, 1)]
    starved = Search(problem, budget=3)
    assert starved.fewer(2, order, steps=1000) is None and not starved.proven and starved.steps_left == 0
    # five of 0.4: the volume says 2 containers, but a container holds 2; proving it takes a search
    fifths = CountProblem(sizes=((400, 0, 0),), counts=(5,), room=(1000, 10, 10))
    assert lower_bound(fifths) == 2
    proving = Search(fifths, budget=1000)
    assert proving.fewer(2, [0], steps=1000) is None and proving.proven
    assert 0 < proving.steps_left < 1000


def test_first_fit_by_counts_is_first_fit_per_instance():
    # groups of identical containers split where first fit would stop filling them
    problem = CountProblem(sizes=((1000, 0, 0), (300, 0, 0)), counts=(7, 5), room=(2500, 100, 100))
    groups, left = first_fit(problem, [0, 1])
    per_container = [tuple(g[3]) for g in groups for _ in range(g[4])]
    assert per_container == [(2, 1), (2, 1), (2, 1), (1, 2)] and left == [0, 0]


@SETTINGS
@given(topologies(), st.sampled_from(["task", "worker"]))
def test_auto_never_costs_yarn_more_than_ffd_or_uses_fewer_than_topology_workers(t, granularity):
    plan = pack(t, algorithm="auto", granularity=granularity)
    validate_plan(t, plan)
    workers = json.loads(t.config["topology.workers"])
    assert len(plan.containers) >= workers
    free = with_config(t, {"topology.workers": None})
    cheapest = pack(free, algorithm="auto", granularity=granularity)
    for sort in ("ram", "cpu"):
        ffd = pack(with_config(free, {"squall.packing.ffd.sort": sort}), algorithm="ffd", granularity=granularity)
        assert yarn_cost(free, cheapest) <= yarn_cost(free, ffd)


def with_config(t, config):
    return replace(t, config={**t.config, **{k: json.dumps(v) for k, v in config.items()}})


def test_auto_is_deterministic_across_hash_seeds():
    outputs = []
    for seed in ("3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([SQUALL, "pack", TEN_TASKS, "--json"], capture_output=True, text=True, env=env,
                              timeout=60)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1] and '"algorithm": "auto"' in outputs[0]
    t = topo([comp("a", 4, cpu=1.2), comp("b", 2, cpu=1.5)], {"squall.container.max.cpu": 4.35})
    assert encode(pack(t)) == encode(pack(t))


# ------------------------------------------------------------------ repack


def test_repack_scale_up_past_the_caps_opens_containers_and_moves_nothing():
    t = topo(SPOUT2_BOLT8)
    plan = pack(t)
    new, diff = repack(t, plan, {"bolt": 30})
    validate_plan(with_parallelism(t, {"bolt": 30}), new)
    assert diff.moved == [] and diff.removed == [] and diff.renumbered == [] and diff.resized == []
    assert [i.component_index for i in diff.added] == list(range(8, 30))
    # container 2 takes 4 more (7 in all), then new containers of 7: 32 instances in 5
    assert [len(c.instances) for c in new.containers] == [7, 7, 7, 7, 4]
    before = {i.id.task_id: c.id for c in plan.containers for i in c.instances}
    after = {i.id.task_id: c.id for c in new.containers for i in c.instances}
    assert all(after[task] == container for task, container in before.items())


def test_repack_scale_down_drops_the_containers_it_empties():
    t = topo(SPOUT2_BOLT8)
    plan = pack(t)
    new, diff = repack(t, plan, {"bolt": 1})
    assert layout(new) == [(2, ["bolt0", "spout0", "spout1"])]  # bolt7 keeps container 2, renumbered to bolt0
    assert diff.moved == [] and len(diff.removed) == 7
    assert [(o.component_index, n.component_index) for o, n in diff.renumbered] == [(7, 0)]


def test_repack_bigger_instances_move_only_what_no_longer_fits():
    t = topo(SPOUT2_BOLT8)
    plan = pack(t)
    bigger = with_component_config(t, {"bolt": {"squall.component.cpu": 0.6}})
    new, diff = repack(bigger, plan, {})
    validate_plan(bigger, new)
    # container 1: 7 x 0.6 = 4.2 > 3.65, so one bolt leaves (6 x 0.6 = 3.6); it fits container 2's room
    assert [i.component_index for i in diff.moved] == [6]
    assert layout(new) == [(1, ["bolt0", "bolt1", "bolt2", "bolt3", "bolt4", "bolt5"]),
                           (2, ["bolt6", "bolt7", "spout0", "spout1"])]
    assert [i.component_index for i in diff.resized] == list(range(8))
    assert diff.added == diff.removed == []
    # resized and scaled at once: bolt6 and the 2 new bolts all fit container 2 (4 x 0.6 + 2 x 0.5 = 3.4)
    new, diff = repack(bigger, plan, {"bolt": 10})
    validate_plan(with_parallelism(bigger, {"bolt": 10}), new)
    assert [len(c.instances) for c in new.containers] == [6, 6] and diff.moved == [diff.resized[6]]
    with pytest.raises(PackingError, match="component 'nope': the topology has no such component"):
        with_component_config(t, {"nope": {"squall.component.cpu": 1}})
    with pytest.raises(ConfigError, match=r"squall.component.cpu \(components.bolt.config\): must be >= 0"):
        repack(with_component_config(t, {"bolt": {"squall.component.cpu": -1}}), plan, {})


def test_repack_resized_instances_that_fit_stay_and_new_ones_open_containers():
    t = topo(SPOUT2_BOLT8)
    plan = pack(t)
    smaller = topo([comp("spout", 2, ram=128), comp("bolt", 8, cpu=0.25, inputs=["spout"])])
    new, diff = repack(smaller, plan, {})
    # all ten fit one container now: container 2's three move into container 1's freed room, and it is given back
    assert layout(new) == [(1, sorted(layout(plan)[0][1] + layout(plan)[1][1]))]
    assert sorted(i.task_id for i in diff.resized) == list(range(1, 11)) and len(diff.moved) == 3
    # 3 cpu a bolt: one bolt and one spout a container. Container 1 keeps one of its 7 bolts and
    # container 2 (bolt7 spout0 spout1) gives up a spout, which fills container 1's gap; 6 bolts open 6
    huge = topo([comp("spout", 2), comp("bolt", 8, cpu=3, inputs=["spout"])])
    new, diff = repack(huge, plan, {})
    validate_plan(huge, new)
    assert layout(new)[:2] == [(1, ["bolt0", "spout1"]), (2, ["bolt7", "spout0"])]
    assert [len(c.instances) for c in new.containers] == [2, 2, 1, 1, 1, 1, 1, 1]
    assert sorted(i.component_index for i in diff.moved if i.component == "bolt") == [1, 2, 3, 4, 5, 6]


def test_repack_at_worker_granularity():
    t = topo(SPOUT2_BOLT8)
    plan = pack(t, granularity="worker")  # 2 - 0.35 = 1.65 cpu: 3 instances a worker
    assert [len(c.instances) for c in plan.containers] == [3, 3, 3, 1]
    new, diff = repack(t, plan, {"bolt": 10})
    validate_plan(with_parallelism(t, {"bolt": 10}), new)
    assert [len(c.instances) for c in new.containers] == [3, 3, 3, 3]
    assert diff.moved == [] and all(res(c.resources) == (2.0, 2048, 4096) for c in new.containers)


def test_what_the_search_proves_impossible_is_impossible():
    """Where the search proves one container fewer impossible, CP-SAT's optimum agrees."""
    cp_model = pytest.importorskip("ortools.sat.python.cp_model", reason="squall[solver] (OR-Tools) not installed")
    checked = 0
    for seed in range(40):
        rng = random.Random(seed)
        k = rng.randint(1, 4)
        problem = CountProblem(
            sizes=tuple((rng.randint(1, 40) * 100, rng.randint(1, 40) * 200, 0) for _ in range(k)),
            counts=tuple(rng.randint(1, 5) for _ in range(k)), room=(4000, 8000, 1000))
        best = min(containers(first_fit(problem, order)[0]) for order in orderings(problem))
        search = Search(problem, budget=200_000)
        solution = None
        while True:
            found = search.fewer(best - 1, orderings(problem)[3], steps=200_000)
            if found is None:
                break
            best, solution = len(found), found
        if solution is not None:
            assert [sum(v[t] for v in solution) for t in range(k)] == list(problem.counts)
        if not search.proven:
            continue
        model = cp_model.CpModel()
        x = [[model.NewIntVar(0, n, "") for n in problem.counts] for _ in range(best)]
        used = [model.NewBoolVar("") for _ in range(best)]
        for t, n in enumerate(problem.counts):
            model.Add(sum(row[t] for row in x) == n)
        for row, u in zip(x, used):
            for d in range(3):
                model.Add(sum(q * s[d] for q, s in zip(row, problem.sizes)) <= problem.room[d] * u)
        model.Minimize(sum(used))
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        assert solver.Solve(model) == cp_model.OPTIMAL
        assert round(solver.ObjectiveValue()) == best, seed
        checked += 1
    assert checked >= 30


def test_the_search_tries_every_maximal_filling():
    """Its proofs rest on this: the fillings of a container holding the first
    component left are every maximal one, as brute force finds them."""
    import random

    for seed in range(30):
        rng = random.Random(seed)
        k = rng.randint(3, 5)
        problem = CountProblem(
            sizes=tuple((rng.randint(1, 12) * 100, rng.randint(1, 12) * 200, rng.randint(0, 2) * 50)
                        for _ in range(k)),
            counts=tuple(rng.randint(1, 6) for _ in range(k)), room=(4000, 8000, 500))
        order = orderings(problem)[seed % 5]
        first = order[0]

        def fits(v):
            return all(sum(q * s[d] for q, s in zip(v, problem.sizes)) <= problem.room[d] for d in range(3))

        expected = {
            v for v in itertools.product(*(range(n + 1) for n in problem.counts))
            if v[first] >= 1 and fits(v)
            and not any(v[t] < problem.counts[t] and fits(v[:t] + (v[t] + 1,) + v[t + 1:]) for t in range(k))
        }
        fillings = maximal_fillings(problem, problem.counts, order, step=lambda cost: None)
        assert len(fillings) == len(set(fillings)) and set(fillings) == expected, seed
