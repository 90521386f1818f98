"""Properties over random topologies, for every algorithm x granularity."""
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from squall.chaining import chains
from squall.idl import encode
from squall.packing import PackingError, pack, repack, validate_plan, with_parallelism
from squall.packing.request import build_request
from squall.resources import Res
from packing_helpers import comp, topo

ALGORITHMS = ("roundrobin", "rcrr", "ffd")
GRANULARITIES = ("task", "worker")
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def topologies(draw, uniform=False):
    n = draw(st.integers(1, 5))
    size = (draw(st.sampled_from([0.1, 0.25, 0.5, 1.0])), draw(st.integers(1, 32)) * 64, draw(st.integers(0, 8)) * 64)
    components = []
    for k in range(n):
        if not uniform:
            size = (draw(st.sampled_from([0.1, 0.25, 0.5, 1.0, 1.5])), draw(st.integers(1, 32)) * 64,
                    draw(st.integers(0, 8)) * 64)
        inputs = [f"c{j}" for j in range(k) if draw(st.booleans())]
        components.append(comp(f"c{k}", draw(st.integers(1, 10)), cpu=size[0], ram=size[1], disk=size[2], inputs=inputs))
    total = sum(c["par"] for c in components)
    config = {
        "topology.workers": draw(st.integers(1, total)),
        "squall.container.max.cpu": draw(st.sampled_from([2.0, 4.0, 8.0])),
        "squall.container.max.ram.mb": draw(st.sampled_from([4096, 8192, 16384])),
        "squall.worker.cpu": draw(st.sampled_from([2.0, 3.0])),
        "squall.worker.ram.mb": draw(st.sampled_from([2560, 4096])),
        "squall.packing.padding.percentage": draw(st.sampled_from([None, 0, 10, 25])),
    }
    return topo(components, config)


def lower_bound(t, algorithm, granularity):
    request = build_request(t, None, algorithm, granularity)
    room = request.room
    need = [0, 0, 0]
    for c in request.components:
        need = [need[0] + c.size.cpu * c.parallelism, need[1] + c.size.ram * c.parallelism,
                need[2] + c.size.disk * c.parallelism]
    return max(math.ceil(n / r) if r > 0 else 1 for n, r in zip(need, (room.cpu, room.ram, room.disk)))


def try_pack(t, algorithm, granularity):
    try:
        return pack(t, algorithm=algorithm, granularity=granularity)
    except PackingError as e:
        message = str(e)
        # only round-robin may refuse a topology whose every instance fits a container alone
        assert "one instance needs" in message or algorithm == "roundrobin", message
        return None


@SETTINGS
@given(topologies())
def test_every_plan_validates_is_deterministic_and_respects_the_lower_bound(t):
    for algorithm in ALGORITHMS:
        for granularity in GRANULARITIES:
            plan = try_pack(t, algorithm, granularity)
            if plan is None:
                continue
            validate_plan(t, plan)
            assert encode(plan) == encode(pack(t, algorithm=algorithm, granularity=granularity))
            assert len(plan.containers) >= lower_bound(t, algorithm, granularity)
            if algorithm == "roundrobin":
                assert len(plan.containers) == build_request(t).workers


@SETTINGS
@given(topologies(uniform=True))
def test_ffd_never_uses_more_containers_than_rcrr_for_uniform_sizes(t):
    ffd = try_pack(t, "ffd", "task")
    rcrr = try_pack(t, "rcrr", "task")
    if ffd is not None:
        assert len(ffd.containers) <= len(rcrr.containers)
        # uniform sizes: k instances fit a container, and ffd fills each to k (optimal)
        request = build_request(t, None, "ffd", "task")
        size, room = request.components[0].size, request.room
        k = min(r // s for r, s in zip((room.cpu, room.ram, room.disk), (size.cpu, size.ram, size.disk)) if s > 0)
        assert len(ffd.containers) == math.ceil(request.total_tasks / k)


@SETTINGS
@given(topologies(), st.data())
def test_repack_invariants(t, data):
    algorithm = data.draw(st.sampled_from(ALGORITHMS))
    granularity = data.draw(st.sampled_from(GRANULARITIES))
    plan = try_pack(t, algorithm, granularity)
    if plan is None:
        return
    old_par = {c.name: c.parallelism for c in t.components}
    scale_up_only = data.draw(st.booleans())
    low = (lambda n: n) if scale_up_only else (lambda n: 1)
    new_par = {name: data.draw(st.integers(low(n), n + 6)) for name, n in old_par.items()}
    try:
        new, diff = repack(t, plan, new_par)
    except PackingError as e:
        assert algorithm == "roundrobin" and "would need" in str(e), str(e)
        return
    validate_plan(with_parallelism(t, new_par), new)  # indexes contiguous, all placed once
    before = {i.id.task_id for c in plan.containers for i in c.instances}
    after = {i.id.task_id for c in new.containers for i in c.instances}
    assert {i.task_id for i in diff.removed} == before - after
    assert {i.task_id for i in diff.added} == after - before
    assert len(diff.removed) == sum(max(0, old_par[n] - new_par[n]) for n in old_par)
    assert len(diff.added) == sum(max(0, new_par[n] - old_par[n]) for n in old_par)
    if scale_up_only:
        assert diff.moved == [] and diff.removed == [] and diff.renumbered == []
    assert encode(new) == encode(repack(t, plan, new_par)[0])


@st.composite
def chainable_topologies(draw):
    """Lines of components of one parallelism (every edge chainable but for its sizes), a branch now and then,
    ``squall.chaining: auto``, the packing's settings drawn."""
    par = draw(st.integers(1, 6))
    components = []
    for k in range(draw(st.integers(2, 6))):
        inputs = [f"c{k - 1}"] if k else []
        if k > 1 and draw(st.booleans()):
            inputs.append(f"c{draw(st.integers(0, k - 2))}")
        components.append(comp(f"c{k}", par if draw(st.integers(0, 4)) else draw(st.integers(1, 6)),
                               cpu=draw(st.sampled_from([0.1, 0.25, 0.3, 0.5, 0.75, 1.0, 1.5])),
                               ram=draw(st.integers(1, 64)) * 64, disk=draw(st.integers(0, 16)) * 64, inputs=inputs))
    config = {
        "squall.chaining": "auto",
        "squall.packing.algorithm": draw(st.sampled_from(["auto", "rcrr", "ffd"])),
        "squall.packing.granularity": draw(st.sampled_from(GRANULARITIES)),
        "squall.container.max.cpu": draw(st.sampled_from([2.0, 4.0, 8.0])),
        "squall.container.max.ram.mb": draw(st.sampled_from([2048, 4096, 8192])),
        "squall.worker.cpu": draw(st.sampled_from([2.0, 3.0])),
        "squall.worker.ram.mb": draw(st.sampled_from([2560, 4096])),
        "squall.packing.padding.percentage": draw(st.sampled_from([None, 0, 10, 25])),
    }
    return topo(components, config)


@SETTINGS
@given(chainable_topologies())
def test_with_chaining_on_what_fits_is_never_refused_and_no_chain_asks_for_more_than_a_core(t):
    for granularity in GRANULARITIES:  # the configured one, and the other as `squall pack --compare` asks
        try:
            request = build_request(t, granularity=granularity)
        except PackingError as e:
            assert "one instance needs" in str(e), str(e)
            continue  # an instance that fits no container alone: refused, and rightly
        plan = pack(t, granularity=granularity)  # never refused for its chains
        validate_plan(t, plan)
        for chain in chains(t, granularity=granularity):
            assert sum(request.sizes[m].cpu for m in chain) <= 1000, chain
            together = sum((request.sizes[m] for m in chain), Res())
            assert together.fits(request.room), chain
