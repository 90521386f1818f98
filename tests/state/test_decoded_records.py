"""Records decoded once per stored bytes (state/decoded.py): a record read again unchanged is the same value,
a changed one is decoded anew, small kinds are never kept, and the kept bytes stay within their bound."""
from squall.idl import encode, schema
from squall.state import Kind, LocalStateManager
from squall.state.decoded import DecodedRecords


def status(container, pid):
    return schema.ContainerStatus(container=container, host="h", executor_pid=pid, updated=1.0, processes=[
        schema.ProcessStatus(name="stmgr", pid=pid + 1, restarts=0, crashes=0)])


def test_a_record_read_again_unchanged_is_not_decoded_again_and_a_changed_one_is(tmp_path):
    with LocalStateManager(str(tmp_path)) as state:
        tmaster = schema.TMasterLocation(topology_name="t", host="h", control_port=1, pid=2, run_id="r")
        plan = schema.PhysicalPlan(topology_name="t", packing_plan_id="p1", status=1, tmaster=tmaster, stmgrs=[],
                                   instances=[])
        state.put(Kind.PHYSICAL_PLAN, "t", plan)
        first = state.get(Kind.PHYSICAL_PLAN, "t")
        assert first == plan and state.get(Kind.PHYSICAL_PLAN, "t") is first
        changed = schema.PhysicalPlan(topology_name="t", packing_plan_id="p2", status=1, tmaster=tmaster,
                                      stmgrs=[], instances=[])
        state.put(Kind.PHYSICAL_PLAN, "t", changed)
        assert state.get(Kind.PHYSICAL_PLAN, "t") == changed
        state.put(Kind.EXECUTION_STATE, "t", schema.ExecutionState(topology_name="t", run_id="r", run_dir="d",
                                                                   submit_time=1.0, submitter="s", status=1,
                                                                   secret="x", cluster="local", python="p"))
        assert state.get(Kind.EXECUTION_STATE, "t") is not state.get(Kind.EXECUTION_STATE, "t")  # never kept


def test_the_kept_bytes_stay_within_the_bound_oldest_out_first():
    records = [status(c, 100 * c) for c in range(1, 6)]
    data = [encode(r) for r in records]
    kept = DecodedRecords(max_bytes=3 * len(data[0]))
    calls = []

    def decoding(k):
        return lambda: calls.append(k) or records[k]

    for k in range(5):
        assert kept.decode(Kind.CONTAINER, data[k], decoding(k)) == records[k]
    assert kept.size <= 3 * len(data[0]) and calls == [0, 1, 2, 3, 4]
    kept.decode(Kind.CONTAINER, data[4], decoding(4))
    kept.decode(Kind.CONTAINER, data[0], decoding(0))
    assert calls == [0, 1, 2, 3, 4, 0]  # 4 was kept, 0 had gone out
