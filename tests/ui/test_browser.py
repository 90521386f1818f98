"""Every page in a real browser (Debian's chromium, headless, through selenium): what it shows, and the action
buttons (deactivate, activate, an update, a refused one) pressed for real against ui_words on the local cluster.

With ``SQUALL_UI_SCREENSHOTS=DIR`` the pages are saved there as PNG (docs/ui.md shows them).
"""
import json
import os

from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from ui_harness import TOKEN, wait_until

SHOTS = os.environ.get("SQUALL_UI_SCREENSHOTS")


def page(browser, local, path, shot=None):
    browser.get(local.url.rstrip("/") + path)
    if SHOTS and shot:
        os.makedirs(SHOTS, exist_ok=True)
        browser.set_window_size(1400, min(2400, browser.execute_script("return document.documentElement.scrollHeight") + 20))
        browser.save_screenshot(os.path.join(SHOTS, f"{shot}.png"))
        browser.set_window_size(1400, 1000)
    return browser


def texts(browser, css):
    return [e.text for e in browser.find_elements(By.CSS_SELECTOR, css)]


def until(browser, predicate, timeout=30):
    """``predicate(browser)`` once true, polled often (an action's message shows until the page reloads), the
    page's elements found afresh each time (a reload makes the old ones stale). Chromium reports a stale
    element in two ways: as such, or as a node that "does not belong to the document"; both are polled past."""
    def polled(driver):
        try:
            return predicate(driver)
        except WebDriverException as e:
            if "does not belong to the document" in (e.msg or ""):
                return False
            raise

    return WebDriverWait(browser, timeout, poll_frequency=0.05,
                         ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(polled)


def message(browser, wanted, timeout=60):
    """The page's message box once it says ``wanted`` (an action's answer)."""
    return until(browser, lambda d: (lambda text: text if wanted in text else None)(
        d.find_element(By.ID, "message").text), timeout)


def keep_token(browser, token):
    field = browser.find_element(By.ID, "token")
    field.clear()
    field.send_keys(token)
    browser.find_element(By.CSS_SELECTOR, "#token-form button").click()
    message(browser, "token kept")


def report(local, name, row):
    """A capacity report folder (as ``squall report capacity`` writes) where the UI looks for reports."""
    folder = os.path.join(local.reports, name)
    os.makedirs(folder)
    with open(os.path.join(folder, "report.json"), "w") as f:
        json.dump({"kind": "capacity", "title": "Capacity of ui_words", "facts": {"topology": "ui_words"},
                   "tables": {"recommendations": [row]}}, f)


def test_the_topology_list_and_the_cluster(browser, local):
    api = local.get("/api/v1/topology/summary")["topologies"][0]
    page(browser, local, "/", "topologies")
    assert texts(browser, "#topologies tbody td:first-child") == ["ui_words"]
    assert texts(browser, "#topologies td.n-instances") == [str(api["instances"])]
    assert texts(browser, "#topologies .status") == ["RUNNING"]
    page(browser, local, "/cluster", "cluster")
    assert browser.find_element(By.ID, "topology-count").text == "1"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#hosts tbody tr")) == 1


def test_the_topology_page_shows_its_components_graph_and_charts(browser, local):
    api = local.get("/api/v1/topology/ui_words?window=60s")
    page(browser, local, "/topology/ui_words?window=60s", "topology")
    assert browser.find_element(By.ID, "status").text == "RUNNING"
    assert texts(browser, "#components tbody td:first-child") == ["sentences", "split", "count"]
    assert texts(browser, "#components td.n-instances") == [str(c["instances"]) for c in api["components"]]
    nodes = browser.find_elements(By.CSS_SELECTOR, "svg.dag g.node")
    assert [n.get_attribute("data-component") for n in nodes] == ["sentences", "split", "count"]
    assert all(n.get_attribute("data-value") != "" for n in nodes)  # coloured by a measured busy fraction
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.dag path.edge")) == 2
    for chart in ("rate-chart", "latency-chart"):
        lines = browser.find_elements(By.CSS_SELECTOR, f"#{chart} polyline.series")
        assert {x.get_attribute("data-series") for x in lines} == {"sentences", "split", "count"}
        assert all(len(x.get_attribute("points").split()) >= 2 for x in lines)
    assert "ValueError: cannot count 'boom'" in texts(browser, "#errors summary")
    page(browser, local, "/topology/ui_words?window=60s&metric=backpressure")
    labels = texts(browser, "svg.dag text.node-label")
    assert len(labels) == 3 and all(x.startswith("backpressure") for x in labels)


def test_the_component_packing_capacity_and_log_pages(browser, local):
    count = local.get("/api/v1/topology/ui_words/component/count")
    page(browser, local, "/topology/ui_words/component/count?window=60s", "component")
    rows = browser.find_elements(By.CSS_SELECTOR, "#instances tbody tr")
    assert [r.get_attribute("data-task") for r in rows] == [str(i["task_id"]) for i in count["instances"]]

    packing = local.get("/api/v1/topology/ui_words/packing")
    page(browser, local, "/topology/ui_words/packing", "packing")
    boxes = browser.find_elements(By.CSS_SELECTOR, ".container-box")
    assert [b.get_attribute("data-container") for b in boxes] == [str(c["id"]) for c in packing["containers"]]
    chips = browser.find_elements(By.CSS_SELECTOR, ".container-box .instance")
    assert sorted(int(c.get_attribute("data-task")) for c in chips) == \
        sorted(i["task_id"] for c in packing["containers"] for i in c["instances"])
    assert any("cpu" in b.text and "of" in b.text for b in browser.find_elements(By.CSS_SELECTOR, ".bar"))

    count = len(local.get("/api/v1/topology/ui_words/component/count")["instances"])
    report(local, "capacity-ui_words-browser", {"component": "count", "kind": "bolt", "parallelism": count,
                                                 "recommended_parallelism": count + 1, "target_rate": 1500.0,
                                                 "capacity_per_instance": 400.0, "notes": "busy above 0.8"})
    page(browser, local, "/topology/ui_words/capacity", "capacity")
    assert texts(browser, "#recommendations tbody td:first-child") == ["count"]
    dry = browser.find_element(By.ID, "dry-run").text
    assert dry.startswith("update of topology 'ui_words':") and f"parallelism  {count} -> {count + 1}" in dry
    keep_token(browser, TOKEN)
    browser.find_element(By.CSS_SELECTOR, "[data-report]").click()
    message(browser, "updated topology 'ui_words'", timeout=90)
    assert len(local.get("/api/v1/topology/ui_words/component/count")["instances"]) == count + 1

    page(browser, local, "/topology/ui_words/logs?container=1&process=stmgr", "logs")
    assert browser.find_element(By.ID, "log-text").text.strip()


def test_actions_from_the_page_deactivate_activate_update_and_refuse(browser, local):
    page(browser, local, "/topology/ui_words")
    keep_token(browser, "not-the-token")
    browser.find_element(By.CSS_SELECTOR, "[data-action=deactivate]").click()
    assert message(browser, "wrong token").startswith("wrong token")
    assert local.get("/api/v1/topology/ui_words")["status"] == "RUNNING"

    keep_token(browser, TOKEN)
    browser.find_element(By.CSS_SELECTOR, "[data-action=deactivate]").click()
    message(browser, "topology 'ui_words' is deactivated")
    until(browser, lambda d: d.find_element(By.ID, "status").text == "PAUSED")
    browser.find_element(By.CSS_SELECTOR, "[data-action=activate]").click()
    message(browser, "topology 'ui_words' is active")
    until(browser, lambda d: d.find_element(By.ID, "status").text == "RUNNING")

    field = browser.find_element(By.CSS_SELECTOR, "#update-form input[name=split]")
    field.clear()
    field.send_keys("0")
    browser.find_element(By.CSS_SELECTOR, "[data-update=preview]").click()
    assert message(browser, "must be a positive integer") == \
        "--component-parallelism split=0: must be a positive integer"

    before = local.get("/api/v1/topology/summary")["topologies"][0]["instances"]
    split = len(local.get("/api/v1/topology/ui_words/component/split")["instances"])
    field = browser.find_element(By.CSS_SELECTOR, "#update-form input[name=split]")
    field.clear()
    field.send_keys(str(split + 1))
    browser.find_element(By.CSS_SELECTOR, "[data-update=preview]").click()
    message(browser, "dry run: nothing applied")
    assert f"split            parallelism  {split} -> {split + 1}" in browser.find_element(By.ID, "update-diff").text
    browser.find_element(By.CSS_SELECTOR, "[data-update=apply]").click()
    message(browser, "updated topology 'ui_words'", timeout=90)
    until(browser, lambda d: d.find_element(By.ID, "instances").text == str(before + 1))
    assert wait_until(lambda: local.get("/api/v1/topology/summary")["topologies"][0]["instances"] == before + 1)
