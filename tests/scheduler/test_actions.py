"""``scheduler/actions.py``: the lines the CLI prints and the UI answers, against a real local state manager."""
import pytest
from scheduler_plans import confirm, recorded

from squall.conf import base_config
from squall.errors import SquallError
from squall.idl import schema
from squall.scheduler import actions, manager
from squall.scheduler.changes import TopologyUpdate
from squall.state import Kind


def test_activate_and_deactivate_say_what_the_master_confirmed(state, tmp_path):
    recorded(state, str(tmp_path))
    confirm(state, "word_count", schema.TopologyStatus.PAUSED)
    assert actions.deactivate(state, "word_count") == "topology 'word_count' is deactivated"
    confirm(state, "word_count", schema.TopologyStatus.RUNNING)
    assert actions.activate(state, "word_count") == "topology 'word_count' is active"
    assert state.get(Kind.EXECUTION_STATE, "word_count").status == schema.TopologyStatus.RUNNING


def test_kill_says_where_the_run_stays(state, tmp_path):
    recorded(state, str(tmp_path / "run"))
    assert actions.kill(state, "word_count") == \
        f"killed topology 'word_count'; its logs and metrics stay in {tmp_path / 'run'}"
    with pytest.raises(manager.NotRunning):
        actions.activate(state, "word_count")


def test_parallelism_of_a_request_is_checked_as_the_command_line_is():
    assert actions.parallelism_of({"split": 3, "count": "4"}) == {"split": 3, "count": 4}
    with pytest.raises(SquallError, match=r"--component-parallelism 'split=many': expected COMPONENT=N"):
        actions.parallelism_of({"split": "many"})


def test_a_dry_run_applies_nothing(state, tmp_path):
    recorded(state, str(tmp_path))
    before = state.get(Kind.PACKING_PLAN, "word_count")
    change = TopologyUpdate(parallelism={"count": 3})
    planned = manager.plan(state, "word_count", change, base_config())
    outcome = actions.update(state, "word_count", change, base_config(), planned, dry_run=True)
    assert outcome == actions.UpdateOutcome(planned, False, "dry run: nothing applied")
    assert state.get(Kind.PACKING_PLAN, "word_count") == before


def test_an_update_that_changes_nothing_says_so(state, tmp_path):
    recorded(state, str(tmp_path))
    change = TopologyUpdate(parallelism={"count": 2})
    planned = manager.plan(state, "word_count", change, base_config())
    outcome = actions.update(state, "word_count", change, base_config(), planned, dry_run=False)
    assert not outcome.applied
    assert outcome.line == "topology 'word_count' already runs so: nothing to change"
