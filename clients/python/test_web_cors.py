"""Pages on another origin reach every surface (issue 43, docs/web-apps.md): a page served from
its own port, in headless Chromium (Playwright with the system browser, as test_dashboard), calls
Firegate the way the web SDK does — credentialed, with the SDK's headers, so the browser sends
preflights and enforces the answers. Firegate runs with an admin token, as a shared CI server
would, so the control routes' preflights are checked too.
"""
import http.server
import shutil
import socketserver
import threading
import uuid

import pytest
import requests

from conftest import _free_port, start_server, stop_server

try:
    from playwright.sync_api import sync_playwright
except ImportError:
    sync_playwright = None

TOKEN = "s3cret"


def _unavailable(why):
    import os
    if os.environ.get("CI"):
        pytest.fail(why + " (required when CI is set)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def firegate():
    proc, base = start_server("--admin-token", TOKEN)
    yield base
    stop_server(proc)


@pytest.fixture(scope="module")
def page_origin():
    """An origin of its own serving an empty page: the app's dev server."""
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"<!doctype html><title>app</title><p>app"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    port = _free_port()
    httpd = socketserver.ThreadingTCPServer(("127.0.0.1", port), Page)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    # `localhost`, not 127.0.0.1: another site than Firegate's, as a dev server is.
    yield f"http://localhost:{port}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def page(page_origin):
    if sync_playwright is None:
        _unavailable("Playwright is not installed (pip install playwright)")
    executable = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if executable is None:
        _unavailable("No system Chromium (apt-get install -y chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True)
        page = browser.new_page()
        page.goto(page_origin + "/")
        yield page
        browser.close()


SDK_HEADERS = {
    "X-Goog-Api-Client": "gl-js/ fire/12.9.0",
    "X-Firebase-GMPID": "1:1:web:cors",
    "x-goog-request-params": "project_id=PROJECT",
    "google-cloud-resource-prefix": "projects/PROJECT/databases/(default)",
    "Content-Type": "text/plain",
}


def call(page, url, method="GET", headers=None, body=None):
    """fetch() from the page, credentialed as the full SDK's XHRs are; returns status, body,
    the Firegate-* and CORS headers the page can read, or the error the browser raised."""
    return page.evaluate("""async ([url, method, headers, body]) => {
        try {
            const r = await fetch(url, {method, headers, body, credentials: 'include'});
            const seen = {};
            r.headers.forEach((v, k) => { seen[k] = v; });
            return {status: r.status, body: await r.text(), headers: seen};
        } catch (e) { return {error: String(e)}; }
    }""", [url, method, headers or {}, body])


def test_the_sdks_rest_calls_pass_their_preflight_and_read_their_answers(firegate, page, page_origin):
    project = "cors-" + uuid.uuid4().hex[:8]
    headers = {k: v.replace("PROJECT", project) for k, v in SDK_HEADERS.items()}
    headers["Authorization"] = "Bearer owner"
    docs = f"{firegate}/v1/projects/{project}/databases/(default)/documents"
    write = '{"writes":[{"update":{"name":"projects/%s/databases/(default)/documents/c/d","fields":{"n":{"integerValue":"1"}}}}]}' % project
    r = call(page, docs + ":commit", "POST", headers, write)
    assert r.get("status") == 200, r
    r = call(page, docs + ":batchGet", "POST", headers, '{"documents":["projects/%s/databases/(default)/documents/c/d"]}' % project)
    assert r.get("status") == 200 and '"found"' in r["body"], r
    # A plain GET the server's fast path would answer: answered the full way, with CORS.
    r = call(page, docs + "/c/d")
    assert r.get("status") == 200 and '"integerValue":"1"' in r["body"].replace(" ", ""), r


def test_errors_reach_the_page_in_their_own_shape(firegate, page):
    r = call(page, f"{firegate}/v1/projects/p/databases/(default)/documents/c/missing")
    assert r.get("status") == 404 and '"NOT_FOUND"' in r["body"], r


def test_control_routes_pass_their_preflight_and_need_the_token(firegate, page):
    url = f"{firegate}/emulator/v1/connections/network"
    body = '{"match":{"appId":"1:1:web:nobody"},"online":false}'
    r = call(page, url, "PUT", {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}, body)
    assert r.get("status") == 200, r
    r = call(page, url, "PUT", {"Content-Type": "application/json"}, body)
    assert r.get("status") == 401, r  # the preflight passed; the route itself wants the token
    r = call(page, url, "PUT", {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
             '{"match":{"appId":"1:1:web:nobody"},"online":true}')
    assert r.get("status") == 200, r


def test_an_edge_clients_firegate_headers_are_readable(firegate, page):
    client = "cors-" + uuid.uuid4().hex[:8]
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    r = call(page, f"{firegate}/clients/{client}", "PUT", auth, '{"project":"%s"}' % client)
    assert r.get("status") in (200, 201), r
    r = call(page, f"{firegate}/clients/{client}/v1/projects/{client}/databases/(default)/documents/c/d", "PATCH",
             {"Content-Type": "application/json"}, '{"fields":{"n":{"integerValue":"2"}}}')
    assert r.get("status") == 200, r
    assert "firegate-has-pending-writes" in r["headers"] or "firegate-write-state" in r["headers"], r["headers"]


def test_a_webchannel_session_runs_from_the_page(firegate, page):
    project = "cors-" + uuid.uuid4().hex[:8]
    db = f"projects/{project}/databases/(default)"
    requests.post(f"{firegate}/v1/{db}/documents:commit",
                  json={"writes": [{"update": {"name": f"{db}/documents/rooms/r1", "fields": {"n": {"integerValue": "7"}}}}]}, timeout=10)
    result = page.evaluate("""async ([base, db]) => {
        const url = base + '/google.firestore.v1.Firestore/Listen/channel';
        const q = (p) => Object.entries(p).map(([k, v]) => k + '=' + encodeURIComponent(v)).join('&');
        // XHR withCredentials, as the SDK's WebChannel sends: no custom header, so no preflight.
        const xhr = (method, params, body) => new Promise((resolve) => {
            const x = new XMLHttpRequest();
            x.open(method, url + '?' + q(params));
            x.withCredentials = true;
            if (body !== undefined) x.setRequestHeader('Content-Type', 'application/x-www-form-urlencoded');
            x.onload = () => resolve({status: x.status, text: x.responseText, session: x.getResponseHeader('X-HTTP-Session-Id')});
            x.onerror = () => resolve({error: 'network error'});
            x.send(body);
        });
        const headers = 'X-Goog-Api-Client:gl-js/ fire/12.9.0\\r\\nX-Firebase-GMPID:1:1:web:page\\r\\n';
        const message = JSON.stringify({database: db, addTarget: {documents: {documents: [db + '/documents/rooms/r1']}, targetId: 2}});
        const open = await xhr('POST', {VER: 8, database: db, RID: 1000, CVER: 22, 'X-HTTP-Session-Id': 'gsessionid', zx: 'a', t: 1},
                               'headers=' + encodeURIComponent(headers) + '&count=1&ofs=0&req0___data__=' + encodeURIComponent(message));
        if (open.error || open.status !== 200) return {open};
        const sid = JSON.parse(open.text.slice(open.text.indexOf('\\n') + 1))[0][1][1];
        let text = '', aid = 0;
        for (let i = 0; i < 5 && !text.includes('CURRENT'); i++) {
            const poll = await xhr('GET', {VER: 8, database: db, RID: 'rpc', SID: sid, AID: aid, CI: 1, TO: 5000, TYPE: 'xmlhttp', zx: 'b', t: 1});
            if (poll.error || poll.status !== 200) return {open, poll};
            text += poll.text;
            const ids = [...poll.text.matchAll(/\\[(\\d+),\\[/g)].map((m) => Number(m[1]));
            aid = Math.max(aid, ...ids);
        }
        return {open, text};
    }""", [firegate, db])
    assert result["open"]["status"] == 200, result
    assert '"c"' in result["open"]["text"]
    assert '"ADD"' in result["text"] and '"integerValue":"7"' in result["text"] and '"CURRENT"' in result["text"], result
    entries = requests.get(f"{firegate}/emulator/v1/connections", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10).json()["connections"]
    assert any(e["protocol"] == "firestore-webchannel" and e["appId"] == "1:1:web:page" for e in entries), entries


def test_preflights_allow_what_the_page_asks_for(firegate, page_origin):
    r = requests.options(f"{firegate}/v1/projects/p/databases/(default)/documents:commit",
                         headers={"Origin": page_origin, "Access-Control-Request-Method": "POST",
                                  "Access-Control-Request-Headers": "authorization,x-goog-api-client,x-app-custom",
                                  "Access-Control-Request-Private-Network": "true"}, timeout=10)
    assert r.status_code in (200, 204)
    assert r.headers["Access-Control-Allow-Origin"] == page_origin
    assert r.headers["Access-Control-Allow-Credentials"] == "true"
    allowed = [h.strip().lower() for h in r.headers["Access-Control-Allow-Headers"].split(",")]
    assert {"authorization", "x-goog-api-client", "x-app-custom", "x-firebase-gmpid", "google-cloud-resource-prefix"} <= set(allowed)
    assert "POST" in r.headers["Access-Control-Allow-Methods"]
    assert r.headers["Access-Control-Allow-Private-Network"] == "true"
    # Without an Origin nothing changes for other clients.
    r = requests.get(f"{firegate}/v1/projects/p/databases/(default)/documents/c/d", timeout=10)
    assert "Access-Control-Allow-Origin" not in r.headers
