"""Log levels and tuple sampling from the UI (ui/debug_levels.py) in a real browser against ui_words on the
local cluster: the REST API refuses without the token and with bad input; the topology page's form sets a
level and its row resets it; the events page's buttons sample the splitter and stop, and its filter shows
one component's sampled emits with their values.

With ``SQUALL_UI_SCREENSHOTS=DIR`` the events page is saved there as ``events.png``, the topology page with a
level set as ``topology-levels.png`` (docs/debugging.md)."""
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from test_browser import keep_token, message, page, texts
from ui_harness import TOKEN, wait_until

API = "/api/v1/topologies/ui_words"


def test_levels_and_sampling_from_the_pages_behind_the_token(browser, local):
    assert local.get(f"{API}/debug") == {"topology": "ui_words", "levels": [], "sampling": []}
    assert local.post(f"{API}/debug/levels", {"levels": ["root=DEBUG:30"]}, token=None, expect=401)
    assert local.post(f"{API}/debug/levels", {"levels": ["root=LOUD"]}, expect=400)["error"].startswith(
        "unknown log level 'LOUD'")
    assert local.post(f"{API}/debug/sampling", {"percent": 200}, expect=400) == {"error": "percent 200 is outside 0-100"}
    assert local.post(f"{API}/debug/sampling", {"percent": 5, "component": "nosuch"}, expect=400)["error"].startswith(
        "unknown component 'nosuch'")
    assert local.get(f"{API}/debug") == {"topology": "ui_words", "levels": [], "sampling": []}
    assert local.get("/api/v1/topologies/nosuch/events", expect=404)["error"].startswith("no topology named 'nosuch'")

    page(browser, local, "/topology/ui_words")
    keep_token(browser, TOKEN)
    assert browser.find_element(By.ID, "no-levels").text == "every logger at its own level"
    form = browser.find_element(By.ID, "level-form")
    logger = form.find_element(By.NAME, "logger")
    logger.clear()
    logger.send_keys("ui_words")
    Select(form.find_element(By.NAME, "level")).select_by_visible_text("DEBUG")
    Select(form.find_element(By.NAME, "component")).select_by_visible_text("split")
    form.find_element(By.CSS_SELECTOR, "[data-level-set]").click()
    message(browser, "log levels in force within 2 s: ui_words=DEBUG:300")
    levels = wait_until(lambda: local.get(f"{API}/debug")["levels"], timeout=10, what="the level in the record")
    assert [(e["logger"], e["level"], e["component"]) for e in levels] == [("ui_words", "DEBUG", "split")]
    assert local.get("/api/v1/topology/ui_words")["debug"]["levels"] == levels
    page(browser, local, "/topology/ui_words", "topology-levels")
    assert texts(browser, "#levels tbody td")[:3] == ["ui_words", "DEBUG", "split"]
    browser.find_element(By.CSS_SELECTOR, "[data-level-reset]").click()
    message(browser, "reset ui_words")
    wait_until(lambda: not local.get(f"{API}/debug")["levels"], timeout=10, what="the level reset")

    page(browser, local, "/topology/ui_words/events")
    form = browser.find_element(By.ID, "sampling-form")
    percent = form.find_element(By.NAME, "percent")
    percent.clear()
    percent.send_keys("100")
    Select(form.find_element(By.NAME, "component")).select_by_visible_text("split")
    form.find_element(By.CSS_SELECTOR, "[data-sampling=on]").click()
    message(browser, "sampling 100% of the emits of component split")
    events = wait_until(lambda: (lambda found: len(found) == 20 and found)(
        local.get(f"{API}/events?component=split&limit=20")["events"]), timeout=30, what="20 of the splitter's emits")
    assert all(e["component"] == "split" and e["stream"] == "default" and len(e["values"]) == 1 for e in events)
    assert local.get(f"{API}/events?component=count")["events"] == []
    page(browser, local, "/topology/ui_words/events")
    browser.find_element(By.CSS_SELECTOR, "[data-sampling=off]").click()
    message(browser, "sampling of every component off")
    wait_until(lambda: not local.get(f"{API}/debug")["sampling"], timeout=10, what="sampling off")

    page(browser, local, "/topology/ui_words/events?component=split&limit=10", "events")
    rows = browser.find_elements(By.CSS_SELECTOR, "#events tbody tr")
    assert len(rows) == 10
    assert set(texts(browser, "#events tbody td:nth-child(2)")) == {"split"}
    page(browser, local, "/topology/ui_words/events?component=count")
    assert browser.find_element(By.ID, "no-events").text == "no sampled emit of count yet"
