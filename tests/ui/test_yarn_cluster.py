"""The cluster view on YARN: ``squall ui`` with a ResourceManager address shows what ``squall cluster`` shows
(ResourceManager REST documents served over real HTTP by tests/yarn/test_rest.py's server), and says so
when the ResourceManager does not answer."""
import socket

from test_rest import rm_server  # noqa: F401  (the fixture)
from ui_harness import Squall


def test_the_cluster_page_shows_nodes_owners_and_queues_or_why_not(rm_server, tmp_path):  # noqa: F811
    squall = Squall(tmp_path / "home")
    squall.start_ui("--config-property", f"squall.yarn.rm.url={rm_server}")
    try:
        yarn = squall.get("/api/v1/cluster/summary")["yarn"]
        assert [(n["host"], n["state"]) for n in yarn["nodes"]] == [("worker1", "overloaded"), ("worker2", "ok")]
        assert yarn["allocated_by"]["spark"] == {"vcores": 4, "mb": 9216}
        assert [q["queue"] for q in yarn["queues"]][:2] == ["root", "root.spark"]
        page = squall.get("/cluster")
        assert "worker1" in page and "root.streaming.squall" in page and "spark 4 vcores / 9,216 MB" in page
    finally:
        squall.close()

    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))  # bound, never listening: the ResourceManager refuses connections
    squall = Squall(tmp_path / "home2")
    squall.start_ui("--config-property", f"squall.yarn.rm.url=http://127.0.0.1:{dead.getsockname()[1]}")
    try:
        error = squall.get("/api/v1/cluster/summary")["yarn"]["error"]
        assert str(dead.getsockname()[1]) in error
        assert error in squall.get("/cluster").replace("&#39;", "'")
    finally:
        squall.close()
        dead.close()
