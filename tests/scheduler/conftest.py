import pytest

from squall.state import LocalStateManager


@pytest.fixture
def state(tmp_path):
    """A started local state manager in its own directory."""
    with LocalStateManager(str(tmp_path / "state"), poll_interval=0.05) as manager:
        yield manager
