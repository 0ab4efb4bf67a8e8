"""The operations dashboard (Public/, served at /) in a real headless browser.

Playwright (PyPI) drives the system Chromium (`apt-get install chromium`; Playwright's own
browser download is never used). Without Playwright or Chromium the tests skip, or fail when
the environment variable CI is set. Every wait is one of Playwright's auto-waiting
expectations with a timeout: no sleeps.

Screenshots (full page, desktop and 390 px wide) go to $FIREGATE_ARTIFACTS, by default
clients/python/artifacts/ (git-ignored).
"""
import json
import os
import re
import shutil
import time
import uuid
from pathlib import Path

import pytest
import requests

from conftest import REPO, start_server, stop_server

try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # reported by the fixture below
    sync_playwright = None

DB = "(default)"
PUBLIC = REPO / "Public"
ARTIFACTS = Path(os.environ.get("FIREGATE_ARTIFACTS") or Path(__file__).resolve().parent / "artifacts")
TIMEOUT = 10_000  # ms, for every expectation


def _unavailable(why):
    if os.environ.get("CI"):
        pytest.fail(why + " (required when CI is set)")
    pytest.skip(why)


def _chromium_path():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def browser():
    if sync_playwright is None:
        _unavailable("Playwright is not installed (pip install playwright)")
    executable = _chromium_path()
    if executable is None:
        _unavailable("No system Chromium (apt-get install -y chromium)")
    expect.set_options(timeout=TIMEOUT)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, headless=True)
        try:
            yield b
        finally:
            b.close()


def _serves_dashboard(base):
    r = requests.get(base + "/", timeout=10)
    return r.status_code == 200 and 'data-testid="event-log"' in r.text


@pytest.fixture(scope="module")
def dashboard_url(base_url):
    """The session's server, when it serves Public/ at `/`; else one started with --public-dir."""
    if _serves_dashboard(base_url):
        yield base_url
        return
    if os.environ.get("FIREGATE_URL"):
        pytest.fail(f"{base_url}/ does not serve the dashboard from Public/")
    proc, base = start_server("--public-dir", str(PUBLIC))
    try:
        assert _serves_dashboard(base), "the server does not serve Public/ at /"
        yield base
    finally:
        stop_server(proc)


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    pg.errors = []
    pg.on("pageerror", lambda err: pg.errors.append(f"page error: {err}"))
    pg.on("console", lambda msg: pg.errors.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    try:
        yield pg
    finally:
        context.close()


def _screenshot(pg, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    pg.screenshot(path=str(path), full_page=True)
    return path


def _docs(base, project):
    return f"{base}/v1/projects/{project}/databases/{DB}/documents"


def _no_horizontal_overflow(pg):
    return pg.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")


def _show_events(pg):
    """On wide windows the event log is a side panel; on narrow ones it is a tab."""
    tab = pg.get_by_test_id("tab-events")
    if tab.is_visible():
        tab.click()
    expect(pg.get_by_test_id("event-log")).to_be_visible()


def test_dashboard_clients_documents_tree_and_events(dashboard_url, page, project, namespace):
    base = dashboard_url
    cid = "dash-" + uuid.uuid4().hex[:10]
    client = f"{base}/clients/{cid}"
    through_client = f"{client}/v1/projects/{project}/databases/{DB}/documents"

    # A client with one acknowledged write in its cache.
    r = requests.put(client, json={"project": project, "persistence": "memory"}, timeout=10)
    assert r.status_code == 200, r.text
    r = requests.patch(f"{through_client}/cities/LA", params={"waitFor": "ack"},
                       json={"fields": {"name": {"stringValue": "Los Angeles"}}}, timeout=30)
    assert r.status_code == 200, r.text

    page.goto(base + "/#clients")
    expect(page.get_by_test_id("health")).to_have_text("healthy")
    expect(page.get_by_test_id("stream-state")).to_have_text("live")
    expect(page.get_by_test_id("clock")).to_contain_text("UTC")

    # Clients: find ours, check what it shows, take it offline with its switch.
    page.get_by_test_id("clients-filter").fill(cid)
    row = page.get_by_test_id(f"client-row-{cid}")
    expect(row).to_be_visible()
    expect(row).to_contain_text(project)
    toggle = page.get_by_test_id(f"client-online-toggle-{cid}")
    state = page.get_by_test_id(f"client-online-state-{cid}")
    expect(toggle).to_have_attribute("role", "switch")
    expect(toggle).to_have_attribute("aria-checked", "true")
    expect(state).to_have_text("online")
    expect(page.get_by_test_id(f"client-cache-{cid}")).to_contain_text("1 doc")

    toggle.click()
    expect(state).to_have_text("offline")
    expect(toggle).to_have_attribute("aria-checked", "false")
    api_state = requests.get(client, timeout=10).json()
    assert api_state["network"]["online"] is False, api_state

    _show_events(page)
    offline_event = page.locator(
        f'[data-testid="event-item"][data-kind="network"][data-client="{cid}"][data-online="false"]')
    expect(offline_event).to_have_count(1)
    expect(offline_event).to_contain_text("offline")

    # A write through the offline client waits in its queue, shown with its state.
    r = requests.patch(f"{through_client}/cities/NY", json={"fields": {"name": {"stringValue": "New York"}}}, timeout=30)
    assert r.status_code == 200 and r.headers.get("Firegate-Write-State") == "pending", r.text
    write_id = r.headers["Firegate-Write-Id"]
    page.get_by_test_id("clients-refresh").click()
    expect(page.get_by_test_id(f"client-pending-count-{cid}")).to_have_text("1")
    page.get_by_test_id(f"client-expand-{cid}").click()
    queued = page.get_by_test_id(f"client-details-{cid}").locator(f'[data-testid="pending-write"][data-write-id="{write_id}"]')
    expect(queued).to_have_attribute("data-state", "pending")
    expect(queued).to_contain_text("cities/NY")
    _screenshot(page, "dashboard-clients.png")

    # Back online: the queue drains, announced by a writeAcknowledged event.
    toggle.click()
    expect(state).to_have_text("online")
    expect(page.locator(f'[data-testid="event-item"][data-kind="writeAcknowledged"][data-client="{cid}"]')).not_to_have_count(0)
    expect(page.get_by_test_id(f"client-pending-count-{cid}")).to_have_text("0")
    assert requests.get(client, timeout=10).json()["network"]["online"] is True

    # Documents: a backend write shows as a commit event and in the browser, typed.
    fields = {
        "name": {"stringValue": "San Francisco"},
        "population": {"integerValue": "860000"},
        "area": {"doubleValue": 121.4},
        "capital": {"booleanValue": False},
        "founded": {"timestampValue": "1776-06-29T00:00:00Z"},
        "location": {"geoPointValue": {"latitude": 37.77, "longitude": -122.42}},
        "tags": {"arrayValue": {"values": [{"stringValue": "west"}, {"integerValue": "7"}]}},
        "mayor": {"mapValue": {"fields": {"name": {"stringValue": "<b>not html</b>"}, "since": {"integerValue": "2024"}}}},
        "state": {"referenceValue": f"projects/{project}/databases/{DB}/documents/states/CA"},
        "logo": {"bytesValue": "aGVsbG8="},
        "nothing": {"nullValue": None},
    }
    r = requests.patch(f"{_docs(base, project)}/cities/SF", json={"fields": fields}, timeout=10)
    assert r.status_code == 200, r.text
    commit = page.locator('[data-testid="event-item"][data-kind="commit"]').filter(has_text="cities/SF").filter(has_text=project)
    expect(commit).to_have_count(1)

    page.get_by_test_id("tab-documents").click()
    page.get_by_test_id("db-select").select_option(json.dumps([project, DB], separators=(",", ":")))
    page.get_by_test_id("collection-item-cities").click()
    expect(page.get_by_test_id("document-item-cities/LA")).to_be_visible()
    page.get_by_test_id("document-item-cities/SF").click()
    expect(page.get_by_test_id("document-path")).to_have_text("cities/SF")
    for name, type_name, text in [
        ("name", "string", '"San Francisco"'),
        ("population", "integer", "860000"),
        ("area", "double", "121.4"),
        ("capital", "boolean", "false"),
        ("founded", "timestamp", "1776-06-29T00:00:00Z"),
        ("location", "geopoint", "37.77, -122.42"),
        ("tags", "array", "2 elements"),
        ("tags[1]", "integer", "7"),
        ("mayor", "map", "2 fields"),
        ("mayor.name", "string", '"<b>not html</b>"'),  # shown as text, never parsed
        ("state", "reference", "states/CA"),
        ("logo", "bytes", "5 bytes"),
        ("nothing", "null", "null"),
    ]:
        field = page.get_by_test_id(f"field-{name}")
        expect(field).to_contain_text(type_name)
        expect(field).to_contain_text(text)
    assert page.locator("#document-detail b").count() == 0

    # The open document follows backend writes.
    r = requests.patch(f"{_docs(base, project)}/cities/SF", params={"updateMask.fieldPaths": "population"},
                       json={"fields": {"population": {"integerValue": "870000"}}}, timeout=10)
    assert r.status_code == 200, r.text
    expect(page.get_by_test_id("field-population")).to_contain_text("870000")
    _screenshot(page, "dashboard-documents.png")

    # Tree: a PUT, then expand the nodes lazily; the live stream shows later writes.
    r = requests.put(f"{base}/users/alan.json", params={"ns": namespace}, json={"name": "Alan Turing", "born": 1912}, timeout=10)
    assert r.status_code == 200, r.text
    expect(page.locator('[data-testid="event-item"][data-kind="treeWrite"]').filter(has_text=namespace)).to_have_count(1)
    page.get_by_test_id("tab-tree").click()
    page.get_by_test_id("tree-ns-select").select_option(namespace)
    expect(page.get_by_test_id("tree-live")).to_have_text("live")
    page.get_by_test_id("tree-toggle-/users").click()
    page.get_by_test_id("tree-toggle-/users/alan").click()
    expect(page.get_by_test_id("tree-value-/users/alan/name")).to_have_text('"Alan Turing"')
    expect(page.get_by_test_id("tree-value-/users/alan/born")).to_have_text("1912")
    requests.put(f"{base}/users/alan/born.json", params={"ns": namespace}, json=1913, timeout=10).raise_for_status()
    expect(page.get_by_test_id("tree-value-/users/alan/born")).to_have_text("1913")
    requests.patch(f"{base}/users.json", params={"ns": namespace}, json={"grace/name": "Grace Hopper"}, timeout=10).raise_for_status()
    expect(page.get_by_test_id("tree-toggle-/users/grace")).to_be_visible()
    requests.delete(f"{base}/users/alan/born.json", params={"ns": namespace}, timeout=10).raise_for_status()
    expect(page.get_by_test_id("tree-node-/users/alan/born")).to_have_count(0)
    _screenshot(page, "dashboard-tree.png")

    # Event log filters.
    _show_events(page)
    page.get_by_test_id("events-client").fill(cid)
    items = page.get_by_test_id("event-item")
    expect(items.first).to_be_visible()
    assert all(c == cid for c in items.evaluate_all("els => els.map(e => e.dataset.client)"))
    page.get_by_test_id("events-kind").select_option("network")
    expect(items).to_have_count(2)  # offline, then online
    expect(items.first).to_contain_text("online")  # newest first
    page.get_by_test_id("events-client").fill("")
    page.get_by_test_id("events-kind").select_option("")

    page.get_by_test_id("tab-clients").click()
    desktop = _screenshot(page, "dashboard-desktop.png")
    assert desktop.stat().st_size > 0
    assert _no_horizontal_overflow(page)

    # A narrow window: panels stack, nothing overflows sideways.
    page.set_viewport_size({"width": 390, "height": 844})
    expect(page.get_by_test_id("tab-events")).to_be_visible()
    expect(page.get_by_test_id(f"client-online-toggle-{cid}")).to_be_visible()
    assert _no_horizontal_overflow(page)
    _screenshot(page, "dashboard-390.png")
    for tab in ("documents", "tree", "events"):
        page.get_by_test_id(f"tab-{tab}").click()
        expect(page.get_by_test_id(f"panel-{tab}")).to_be_visible()
        assert _no_horizontal_overflow(page), tab
        _screenshot(page, f"dashboard-390-{tab}.png")

    assert page.errors == [], page.errors


def test_dashboard_asks_for_the_admin_token(browser):
    token = "t-" + uuid.uuid4().hex
    proc, base = start_server("--admin-token", token, "--public-dir", str(PUBLIC))
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        assert requests.get(base + "/clients", timeout=10).status_code == 401
        cid = "dash-" + uuid.uuid4().hex[:10]
        r = requests.put(f"{base}/clients/{cid}", headers={"Authorization": f"Bearer {token}"}, json={}, timeout=10)
        assert r.status_code == 200, r.text

        pg = context.new_page()
        pg.goto(base + "/")
        dialog = pg.get_by_test_id("token-dialog")
        expect(dialog).to_be_visible()
        pg.get_by_test_id("token-input").fill("wrong")
        pg.get_by_test_id("token-submit").click()
        expect(pg.get_by_test_id("token-error")).to_be_visible()  # asked again, with the reason
        pg.get_by_test_id("token-input").fill(token)
        pg.get_by_test_id("token-submit").click()
        expect(dialog).to_be_hidden()
        expect(pg.get_by_test_id(f"client-row-{cid}")).to_be_visible()
        expect(pg.get_by_test_id("stream-state")).to_have_text("live")
        expect(pg.locator(f'[data-testid="event-item"][data-kind="client"][data-client="{cid}"]')).not_to_have_count(0)
        assert pg.evaluate("localStorage.getItem('firegate.adminToken')") == token

        # Kept: a reload does not ask again.
        pg.reload()
        expect(pg.get_by_test_id(f"client-row-{cid}")).to_be_visible()
        expect(pg.get_by_test_id("stream-state")).to_have_text("live")
        expect(dialog).to_be_hidden()
    finally:
        context.close()
        stop_server(proc)


def test_dashboard_shows_rtdb_sockets_drops_one_and_revokes_its_auth(dashboard_url, page, namespace):
    """A Realtime Database socket appears under Connections with its namespace, app and user;
    Revoke auth sends it `ac`; Drop closes it (and its onDisconnect runs)."""
    import base64
    import json as _json
    from rtdb_socket import RealtimeSocket

    claims = base64.urlsafe_b64encode(_json.dumps({"sub": "dash-user"}).encode()).decode().rstrip("=")
    sock = RealtimeSocket(dashboard_url, namespace, headers={"X-Firebase-GMPID": "1:dash:rtdb", "Authorization": f"Bearer e30.{claims}.x"})
    cid = sock.hello["s"].split("-")[0]
    try:
        assert sock.request("o", {"p": "/presence/me", "d": "offline"})["s"] == "ok"
        page.goto(dashboard_url + "/#connections")
        row = page.get_by_test_id(f"connection-{cid}")
        expect(row).to_contain_text("rtdb-websocket")
        expect(row).to_contain_text(namespace)
        expect(row).to_contain_text("1:dash:rtdb · dash-user")
        page.get_by_test_id(f"connection-revoke-{cid}").click()
        assert sock.wait_push(lambda a, b: a == "ac")[1]["s"] == "invalid_token"
        page.get_by_test_id(f"connection-drop-{cid}").click()
        code, _ = sock.wait_closed()
        assert code == 1001
        expect(page.get_by_test_id(f"connection-{cid}")).to_have_count(0)
        deadline = time.time() + 10
        while requests.get(f"{dashboard_url}/presence/me.json", params={"ns": namespace}).json() != "offline":
            assert time.time() < deadline
            time.sleep(0.05)
        assert page.errors == []
    finally:
        sock.close()


def test_dashboard_lists_real_sdk_connections_and_switches_them(dashboard_url, page, project):
    """A real gRPC client appears under Connections; the panel's switch takes its project
    offline (the client's calls then fail UNAVAILABLE), lists the switch, and clears it."""
    import grpc
    from google.cloud.firestore_v1.types import document as doc_types
    from google.cloud.firestore_v1.types import firestore as fs

    name = f"projects/{project}/databases/{DB}/documents/c/d"
    meta = [("authorization", "Bearer owner"), ("google-cloud-resource-prefix", f"projects/{project}/databases/{DB}"),
            ("x-firebase-gmpid", "1:dash:web")]
    channel = grpc.insecure_channel(dashboard_url.split("://", 1)[1])
    get = channel.unary_unary("/google.firestore.v1.Firestore/GetDocument", request_serializer=fs.GetDocumentRequest.serialize,
                              response_deserializer=doc_types.Document.deserialize)

    def status():
        try:
            get(fs.GetDocumentRequest(name=name), metadata=meta, timeout=10)
            return grpc.StatusCode.OK
        except grpc.RpcError as error:
            return error.code()

    try:
        assert status() == grpc.StatusCode.NOT_FOUND
        page.goto(dashboard_url + "/#connections")
        row = page.locator("[data-testid^=connection-c]").filter(has_text=project)
        expect(row).to_have_count(1)
        expect(row).to_contain_text("firestore-grpc")
        expect(row).to_contain_text("1:dash:web")
        expect(row).to_contain_text("GetDocument 1")  # its calls, by method

        page.get_by_test_id("switch-key").select_option("project")
        page.get_by_test_id("switch-value").fill(project)
        page.get_by_test_id("switch-offline").click()
        expect(page.get_by_test_id(f"switch-project={project}")).to_contain_text("offline")
        assert status() == grpc.StatusCode.UNAVAILABLE
        _screenshot(page, "dashboard-connections.png")

        page.get_by_test_id(f"switch-project={project}").get_by_role("button", name="Clear").click()
        expect(page.get_by_test_id(f"switch-project={project}")).to_have_count(0)
        assert status() == grpc.StatusCode.NOT_FOUND
        assert page.errors == []
    finally:
        channel.close()


def test_dashboard_rules_view_shows_ruleset_coverage_live_decisions_and_traces(browser):
    """On a server of its own: loading rules changes how every request is served."""
    import base64
    proc, base = start_server("--public-dir", str(PUBLIC))
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    errors = []
    pg.on("pageerror", lambda err: errors.append(str(err)))
    try:
        project = "dash-" + uuid.uuid4().hex[:8]
        source = ("rules_version = '2';\nservice cloud.firestore {\n  match /databases/{d}/documents/notes/{id} {\n"
                  "    allow read: if request.auth.uid == resource.data.owner;\n    allow write: if request.auth != null;\n  }\n}\n")
        r = requests.put(f"{base}/emulator/v1/projects/{project}:securityRules", json={"rules": {"files": [{"content": source}]}}, timeout=10)
        assert r.status_code == 200
        requests.patch(f"{_docs(base, project)}/notes/n1", json={"fields": {"owner": {"stringValue": "ann"}}},
                       headers={"Authorization": "Bearer owner"}, timeout=10)
        pg.goto(base + "/#rules")
        expect(pg.get_by_test_id("panel-rules")).to_be_visible()
        expect(pg.get_by_test_id("rules-decisions-empty")).to_be_visible()

        def token(sub):
            def b64(o):
                return base64.urlsafe_b64encode(json.dumps(o).encode()).rstrip(b"=").decode()
            return f"{b64({'alg': 'none'})}.{b64({'sub': sub})}."
        r = requests.get(f"{_docs(base, project)}/notes/n1", headers={"Authorization": f"Bearer {token('bob')}"}, timeout=10)
        assert r.status_code == 403
        decision = pg.get_by_test_id("rules-decision").first
        expect(decision).to_contain_text("deny")
        expect(decision).to_contain_text("get /notes/n1")
        decision.click()
        expect(pg.get_by_test_id("rules-trace")).to_contain_text(f"Decision {r.headers['Firegate-Rules-Decision']}: deny")
        expect(pg.get_by_test_id("rules-trace-rule").first).to_contain_text("L4: allow read: if request.auth.uid == resource.data.owner; → false")
        pg.get_by_test_id("rules-project").fill(project)
        pg.get_by_test_id("rules-show").click()
        expect(pg.get_by_test_id("rules-source")).to_contain_text("allow write: if request.auth != null;")
        expect(pg.get_by_test_id("rules-covered-line").first).to_have_attribute("title", re.compile("false ×1"))
        _screenshot(pg, "dashboard-rules.png")
        assert not errors, errors
    finally:
        context.close()
        stop_server(proc)
