"""Log search and task profiles in a real browser (headless chromium) against ui_words on the local cluster:
the logs page's search box finds the counter's failures in every container, a bad expression is said in
one line, the instance row's buttons (behind the token) show a task's stacks and link its flame graph, the
REST API lists its allocations, and the kept results are linked.

With ``SQUALL_UI_SCREENSHOTS=DIR`` the pages are saved there (docs/debugging.md shows them)."""
import os

from selenium.webdriver.common.by import By

from test_browser import SHOTS, keep_token, message, page, texts, until
from ui_harness import TOKEN, request, wait_until

FAILURE = "cannot count 'boom'"


def shot(browser, name):
    if SHOTS:
        os.makedirs(SHOTS, exist_ok=True)
        browser.save_screenshot(os.path.join(SHOTS, f"{name}.png"))


def test_the_search_box_and_the_profile_buttons(browser, local):
    wait_until(lambda: local.get("/api/v1/topologies/ui_words/logs/search?grep=cannot%20count")["matches"],
               timeout=60, what="a failed count in the logs")
    page(browser, local, "/topology/ui_words/logs")
    box = browser.find_element(By.CSS_SELECTOR, "form.search input[name=grep]")
    box.send_keys(FAILURE)
    box.submit()
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#search-results tbody tr"))
    lines = texts(browser, "#search-results tbody td:last-child")
    assert lines and all(FAILURE in line for line in lines)
    api = local.get("/api/v1/topologies/ui_words/logs/search?grep=" + "cannot%20count%20%27boom%27")
    assert [m["text"] for m in api["matches"]][:len(lines)] == lines[:len(api["matches"])]
    shot(browser, "search")
    page(browser, local, "/topology/ui_words/search?grep=%28")
    assert browser.find_element(By.ID, "search-error").text == (
        "--grep '(' is not a regular expression: missing ), unterminated subpattern at position 0")

    count = local.get("/api/v1/topology/ui_words/component/count")["instances"]
    task = next(i["task_id"] for i in count if i["pid"])
    profile = "/api/v1/topologies/ui_words/profile"
    assert local.post(profile, {"task": task, "kind": "stacks"}, token=None, expect=401)
    assert local.post(profile, {"task": 999, "kind": "stacks"}, expect=400)["error"].startswith(
        "topology 'ui_words' has no task 999 (its tasks: ")
    memory = local.post(profile, {"task": task, "kind": "memory", "seconds": 0.5})
    assert memory["allocations"] and memory["task"] == task

    page(browser, local, "/topology/ui_words/component/count")
    keep_token(browser, TOKEN)
    row = f"#instances tr[data-task='{task}']"
    browser.find_element(By.CSS_SELECTOR, f"{row} [data-profile=stacks]").click()
    message(browser, "kept as stacks-")
    assert "(most recent call first)" in browser.find_element(By.ID, "profile-text").text
    flame = browser.find_element(By.CSS_SELECTOR, f"{row} [data-profile=flame]")
    browser.execute_script("arguments[0].setAttribute('data-seconds', '1')", flame)  # the page asks for 5
    flame.click()
    message(browser, "kept as flame-")
    link = browser.find_element(By.ID, "profile-link").get_attribute("href")
    assert link.endswith(".svg") and browser.find_element(By.ID, "profile-image").get_attribute("src") == link
    svg = request(local.url, "GET", link[len(local.url.rstrip("/")):])
    assert "<svg" in svg and svg.rstrip().endswith("</svg>")
    shot(browser, "profile")

    page(browser, local, "/topology/ui_words/debug", "debug-results")
    assert {"stacks", "flame", "memory"} <= set(texts(browser, "#debug-results tbody td:nth-child(3)"))
