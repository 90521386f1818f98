"""The health page and its REST API in a real browser (headless chromium) against a real health manager: a
topology whose sink carries half its load, in recommend mode; the pending recommendation shown first with
its evidence, applied with the page's button behind the token, and the sink scaled up.

With ``SQUALL_UI_SCREENSHOTS=DIR`` the page is saved there as ``health.png`` (docs/health.md shows it)."""
import os

from selenium.webdriver.common.by import By

from test_browser import keep_token, message, page, texts
from ui_harness import TOKEN, wait_until

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACED = os.path.join(TESTS, "health", "topologies", "health_paced.py")


def sink_instances(local):
    shown = local.get("/api/v1/topology/paced")
    return next(c["instances"] for c in shown["components"] if c["name"] == "sink")


def test_the_pending_recommendation_is_shown_first_and_applied_from_the_page(browser, local):
    out = os.path.join(local.home, "paced-out")
    os.makedirs(out)
    local.run("submit", PACED, "--config-property", f"health.out.dir={out}", "--config-property", "health.ids=100000",
              "--config-property", "squall.health.interval.secs=1",
              "--config-property", "topology.builtin.metrics.bucket.size.secs=1")  # a round's window holds a bucket
    try:
        def scale_up():
            pending = local.get("/api/v1/topologies/paced/health")["pending"]
            return pending if pending and (pending["action"]["kind"], pending["component"]) == ("scale", "sink") \
                else None

        pending = wait_until(scale_up, timeout=90, what="a pending recommendation to scale the sink up")
        assert local.post("/api/v1/topologies/paced/health/mode", {"mode": "auto"}, token=None, expect=401)
        assert local.post("/api/v1/topologies/paced/health/mode", {"mode": "bogus"}, expect=400) == {
            "error": "--mode 'bogus': expected one of off, recommend, auto"}
        assert local.get("/api/v1/topologies/nosuch/health", expect=404)["error"].startswith(
            "no topology named 'nosuch' is running")

        page(browser, local, "/topology/paced/health?window=60s", "health")
        assert browser.find_element(By.ID, "mode").text == "recommend"
        assert browser.find_element(By.CSS_SELECTOR, "#pending h2").text == "Recommended: " + pending["summary"]
        assert browser.find_element(By.CSS_SELECTOR, "[data-health-apply]").get_attribute(
            "data-health-apply") == pending["id"]
        assert len(browser.find_elements(By.CSS_SELECTOR, "svg.chart")) == 2
        assert "sink" in texts(browser, "#symptoms tbody td:first-child")
        assert sink_instances(local) == 1  # recommend changes nothing on its own

        keep_token(browser, TOKEN)
        browser.find_element(By.CSS_SELECTOR, "[data-health-apply]").click()
        message(browser, "will be applied at the next round")
        wait_until(lambda: any(d["id"] == pending["id"] and d["status"] in ("applied", "effective", "ineffective")
                               for d in local.get("/api/v1/topologies/paced/health")["history"]),
                   timeout=120, what="the recommendation applied")
        assert sink_instances(local) == pending["action"]["parallelism"]
        page(browser, local, "/topology/paced/health?window=60s")
        assert browser.find_elements(By.CSS_SELECTOR, "svg.chart line.mark")
    finally:
        local.run("kill", "paced")
