"""The dashboard's Timeline panel in headless Chromium (as test_dashboard.py: Playwright driving
the system Chromium, auto-waiting expectations, no sleeps): a client's offline story drawn live,
a mark's detail and its rules decision, and a saved trace of 10 000 steps opened from a file."""
import json
import uuid

import pytest
import requests

from conftest import start_server, stop_server
from test_dashboard import PUBLIC, _screenshot, browser, page  # noqa: F401 (fixtures)
from test_timeline import offline_story

try:
    from playwright.sync_api import expect
except ImportError:  # test_dashboard's fixture reports it
    expect = None


@pytest.fixture(scope="module")
def dashboard_url():
    """A server of this module's own serving Public/: the story loads rules, which must not
    change how the session's server serves other modules."""
    proc, base = start_server("--public-dir", str(PUBLIC))
    yield base
    stop_server(proc)


def canvas_point(pg, lane_id, ms):
    """Where the chart draws a step of `lane_id` at `ms` (the canvas publishes its geometry)."""
    data = pg.get_by_test_id("timeline-canvas").evaluate("c => ({...c.dataset, width: c.clientWidth})")
    lanes = data["lanes"].split(" ")
    start, end = (float(v) for v in data["view"].split(","))
    gutter, axis, row = int(data["gutter"]), int(data["axis"]), int(data["row"])
    x = gutter + (ms - start) / (end - start) * (data["width"] - gutter)
    return {"x": x, "y": axis + lanes.index(lane_id) * row + 16}


def test_a_clients_offline_story_is_drawn_live_and_a_mark_opens_its_detail(dashboard_url, page, project):
    base = dashboard_url
    cid = "tl-" + uuid.uuid4().hex[:8]
    page.goto(base + "/#timeline")
    expect(page.get_by_test_id("panel-timeline")).to_be_visible()
    page.get_by_test_id("timeline-filter").fill(cid)
    offline_story(base, project, cid).close()
    canvas = page.get_by_test_id("timeline-canvas")
    expect(canvas).to_have_attribute("data-lanes", f"client:{cid}")
    events = requests.get(f"{base}/clients/{cid}/timeline", timeout=10).json()["events"]
    expect(canvas).to_have_attribute("data-marks", str(len(events)))
    # Live: a new step appears without a reload.
    requests.post(f"{base}/clients/{cid}:disableNetwork", timeout=10)
    expect(canvas).to_have_attribute("data-marks", str(len(events) + 1))
    page.get_by_test_id("timeline-fit").click()
    expect(canvas).to_have_attribute("data-marks", str(len(events) + 1))
    rejected = next(e for e in events if e["kind"] == "writeRejected")
    # Steps a millisecond apart can share a pixel: zoom in on the rejection until it stands alone.
    for _ in range(12):
        point = canvas_point(page, f"client:{cid}", rejected["ms"])
        box = canvas.bounding_box()
        page.mouse.move(box["x"] + point["x"], box["y"] + point["y"])
        page.mouse.wheel(0, -200)
    point = canvas_point(page, f"client:{cid}", rejected["ms"])
    canvas.click(position=point)
    detail = page.get_by_test_id("timeline-detail")
    expect(detail).to_be_visible()
    expect(detail).to_contain_text("writeRejected")
    expect(detail).to_contain_text("PERMISSION_DENIED")
    _screenshot(page, "timeline-live.png")
    page.get_by_test_id("timeline-decision").click()
    expect(page.get_by_test_id("rules-trace")).to_be_visible()
    expect(page.get_by_test_id("rules-trace")).to_contain_text(rejected["decision"])
    assert not page.errors, page.errors


def synthetic_trace(count):
    """A trace file of `count` steps over two lanes: writes, snapshots and offline spans."""
    lanes = [{"id": f"client:{n}", "kind": "client", "name": n, "protocol": "edge", "opened": "2030-01-01T00:00:00Z", "project": "demo"}
             for n in ("phone", "laptop")]
    events = []
    for i in range(count):
        lane = lanes[i % 2]["id"]
        ms = 1893456000000 + i * 7.5
        step = i // 2 % 10
        kind, facts = [
            ("network", {"online": False, "cause": "networkSwitch"}), ("writeQueued", {"writeId": str(i // 20), "writes": 1, "documents": ["c/x"]}),
            ("snapshot", {"listener": "1", "fromCache": True, "hasPendingWrites": True, "documents": 3, "changes": 1,
                          "changed": [{"type": "modified", "path": "c/x"}]}),
            ("network", {"online": True}), ("writeSent", {"writeId": str(i // 20)}),
            ("writeAcknowledged" if i % 40 < 20 else "writeRejected", {"writeId": str(i // 20), "status": "PERMISSION_DENIED", "message": "no"}),
            ("snapshot", {"listener": "1", "fromCache": False, "hasPendingWrites": False, "documents": 3, "changes": 0, "changed": []}),
            ("listenOpened", {"listener": "2", "target": "c"}), ("gc", {"documentsRemoved": 1, "targetsRemoved": 0}),
            ("listenClosed", {"listener": "2"}),
        ][step]
        events.append({"seq": i + 1, "lane": lane, "time": "", "ms": ms, "kind": kind, **facts})
    return {"firegate": "timeline", "version": 1, "exportedAt": "2030-01-01T00:01:00Z", "capacity": 100000, "lanes": lanes, "events": events}


def test_a_saved_trace_of_ten_thousand_steps_opens_from_a_file_and_stays_usable(dashboard_url, page, tmp_path):
    trace_file = tmp_path / "trace.json"
    trace_file.write_text(json.dumps(synthetic_trace(10_000)))
    page.goto(dashboard_url + "/#timeline")
    expect(page.get_by_test_id("panel-timeline")).to_be_visible()
    page.get_by_test_id("timeline-file").set_input_files(str(trace_file))
    canvas = page.get_by_test_id("timeline-canvas")
    expect(canvas).to_have_attribute("data-marks", "10000")
    expect(canvas).to_have_attribute("data-lanes", "client:phone client:laptop")
    expect(page.get_by_test_id("timeline-source")).to_contain_text("trace.json")
    # No freeze: a full paint of 10 000 steps, then zooming and panning, each within a frame or so.
    assert float(canvas.get_attribute("data-paint-ms")) < 1000
    box = canvas.bounding_box()
    for delta in (-400, -400, 300):
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 40)
        page.mouse.wheel(0, delta)
    page.mouse.move(box["x"] + 400, box["y"] + 60)
    page.mouse.down()
    page.mouse.move(box["x"] + 300, box["y"] + 60, steps=5)
    page.mouse.up()
    assert float(canvas.get_attribute("data-paint-ms")) < 1000
    page.get_by_test_id("timeline-fit").click()
    # The first snapshot of the laptop's lane (seq 6) opens its detail with its changed document.
    first_snapshot = next(e for e in synthetic_trace(12)["events"] if e["kind"] == "snapshot" and e["lane"] == "client:laptop")
    for _ in range(30):
        point = canvas_point(page, "client:laptop", first_snapshot["ms"])
        page.mouse.move(box["x"] + point["x"], box["y"] + point["y"])
        page.mouse.wheel(0, -400)
    expect(canvas).not_to_have_attribute("data-view", "")
    canvas.click(position=canvas_point(page, "client:laptop", first_snapshot["ms"]))
    detail = page.get_by_test_id("timeline-detail")
    expect(detail).to_contain_text("snapshot")
    expect(page.get_by_test_id("timeline-changed")).to_contain_text("c/x")
    # Narrow windows keep the chart inside the page.
    page.set_viewport_size({"width": 390, "height": 800})
    expect(canvas).to_have_attribute("data-marks", "10000")
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    assert not page.errors, page.errors
