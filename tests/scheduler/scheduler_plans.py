"""Real plans in a real local state manager, as a running topology leaves them (no process runs)."""
import os
import time

from squall.conf import base_config
from squall.idl import schema
from squall.loader import load_topology_file
from squall.packing import pack
from squall.state import Kind, LocalStateManager

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORD_COUNT = os.path.join(REPO, "examples", "word_count.py")


def word_count() -> schema.Topology:
    """examples/word_count.py's plan: sentence x1 -> split x2 (shuffle) -> count x2 (fields), two workers."""
    return load_topology_file(WORD_COUNT).plan


def recorded(state: LocalStateManager, run_dir: str, topology: schema.Topology = None,
             status: int = schema.TopologyStatus.RUNNING) -> schema.ExecutionState:
    """Write the records ``submit`` writes for a topology on the local cluster; its execution state."""
    topology = topology or word_count()
    plan = pack(topology, base_config())
    execution = schema.ExecutionState(topology_name=topology.name, run_id="r1", run_dir=run_dir,
                                      submit_time=time.time(), submitter="test", status=status, secret="s",
                                      cluster="local", python="python3")
    state.put(Kind.TOPOLOGY, topology.name, topology)
    state.put(Kind.PACKING_PLAN, topology.name, plan)
    state.put(Kind.EXECUTION_STATE, topology.name, execution)
    return execution


def confirm(state: LocalStateManager, name: str, status: int) -> None:
    """The topology master's part: a physical plan of the current packing plan with ``status``."""
    plan = state.get(Kind.PACKING_PLAN, name)
    state.put(Kind.PHYSICAL_PLAN, name, schema.PhysicalPlan(
        topology_name=name, packing_plan_id=plan.id, status=status,
        tmaster=schema.TMasterLocation(topology_name=name, host="h", control_port=1, pid=1, run_id="r1"),
        stmgrs=[], instances=[]))
