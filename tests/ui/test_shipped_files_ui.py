"""The shipped files in the REST API over real HTTP (a real ``squall ui`` process) and on their page in a real
browser: the versions in force, and a new version uploaded with the token, refused in the CLI's words
without it or for an alias not shipped. The topology's records are written as submit writes them; no task
runs (the tasks' side: tests/e2e)."""
import json
import os
import urllib.error
import urllib.request

import pytest

from squall.idl import schema
from squall.loader import load_topology_file
from squall.scheduler.shipped_files import parse, ship_at_submit
from squall.state import Kind, LocalStateManager

from selenium.webdriver.common.by import By

from test_browser import keep_token, message, page, texts, until
from ui_harness import TOKEN, Squall, request

LOOKUP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e", "topologies",
                      "lookup_files.py")
FILES = "/api/v1/topologies/lookup_files/files"


@pytest.fixture
def shipped(tmp_path):
    """lookup_files's records with ``table.txt`` shipped as ``lookup``, and ``squall ui`` serving them."""
    squall = Squall(tmp_path / "home")
    table = tmp_path / "table.txt"
    table.write_text("alpha=one\n")
    state = LocalStateManager(str(tmp_path / "home" / "state"))
    execution = schema.ExecutionState(topology_name="lookup_files", run_id="r1", run_dir=str(tmp_path / "run"),
                                      submit_time=0.0, submitter="me", status=schema.TopologyStatus.RUNNING,
                                      secret="s", cluster="local", python="")
    state.put(Kind.TOPOLOGY, "lookup_files", load_topology_file(LOOKUP).plan)
    state.put(Kind.EXECUTION_STATE, "lookup_files", execution)
    state.put(Kind.FILES, "lookup_files", ship_at_submit(parse([f"{table}#lookup"]), execution))
    squall.start_ui()
    yield squall, state, tmp_path / "run" / "files" / "lookup"
    squall.close()


def put(squall, path, data, token=TOKEN, expect=200):
    headers = {"Content-Type": "application/octet-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(squall.url.rstrip("/") + path, data=data, method="PUT", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    payload = json.loads(raw)
    assert status == expect, payload
    return payload


def versions(payload):
    return [(f["alias"], f["version"], f["name"], f["size"]) for f in payload["files"]]


def test_files_are_listed_and_a_new_version_is_uploaded_with_the_token(shipped):
    squall, state, folder = shipped
    assert versions(squall.get(FILES)) == [("lookup", 1, "table.txt", 10)]
    before = state.get(Kind.FILES, "lookup_files")

    assert put(squall, f"{FILES}/lookup", b"alpha=uno\n", token=None, expect=401)["error"].startswith(
        "this action needs the UI's token")
    assert put(squall, f"{FILES}/other?filename=t.txt", b"x", expect=400) == {"error": (
        "upload 't.txt' as 'other': topology 'lookup_files' has no shipped file 'other' (shipped: lookup); an "
        "update replaces files shipped at submit")}
    assert put(squall, f"{FILES}/lookup?filename=../t.txt", b"x", expect=400)["error"].startswith(
        "filename '../t.txt': use letters")
    dry = put(squall, f"{FILES}/lookup?filename=t2.txt&dry_run=true", b"alpha=uno\n")
    assert versions(dry) == [("lookup", 2, "t2.txt", 10)] and dry["message"] == "dry run: nothing applied"
    assert state.get(Kind.FILES, "lookup_files") == before and os.listdir(folder) == ["1"]

    done = put(squall, f"{FILES}/lookup?filename=t2.txt", b"alpha=uno\n")
    assert versions(done) == [("lookup", 2, "t2.txt", 10)]
    assert versions(squall.get(FILES)) == [("lookup", 2, "t2.txt", 10)]
    assert (folder / "2" / "t2.txt").read_bytes() == b"alpha=uno\n"
    assert request(squall.url, "GET", "/api/v1/topologies/nope/files", expect=404)["error"].startswith(
        "no topology named 'nope' is running")


def test_the_files_page_lists_them_and_ships_a_new_version(shipped, browser, tmp_path):
    squall, state, folder = shipped
    before = state.get(Kind.FILES, "lookup_files")
    page(browser, squall, "/topology/lookup_files/files")
    assert texts(browser, "#files tbody td")[:4] == ["lookup", "1", "table.txt", "10 bytes"]
    keep_token(browser, TOKEN)
    new = tmp_path / "t2.txt"
    new.write_text("alpha=uno\n")
    browser.find_element(By.CSS_SELECTOR, "tr[data-alias=lookup] input[type=file]").send_keys(str(new))
    browser.find_element(By.CSS_SELECTOR, "button[data-ship=preview]").click()
    message(browser, "lookup: version 2 (t2.txt, 10 bytes). dry run: nothing applied")
    assert state.get(Kind.FILES, "lookup_files") == before

    browser.find_element(By.CSS_SELECTOR, "button[data-ship=ship]").click()
    message(browser, "lookup: version 2 (t2.txt, 10 bytes). shipped to topology 'lookup_files'")
    until(browser, lambda d: texts(d, "#files tbody td")[:3] == ["lookup", "2", "t2.txt"])  # the page reloaded
    assert (folder / "2" / "t2.txt").read_text() == "alpha=uno\n"
    page(browser, squall, "/topology/lookup_files/files", "files")

    browser.find_element(By.CSS_SELECTOR, "button[data-ship=ship]").click()
    message(browser, "choose the new version of lookup first")
