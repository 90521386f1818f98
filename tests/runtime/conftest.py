import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOPOLOGIES = os.path.join(HERE, "topologies")


@pytest.fixture
def topo_path():
    def path(name):
        return os.path.join(TOPOLOGIES, name)
    return path

