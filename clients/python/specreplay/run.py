"""One spec test on one server (`SpecRun`): its SDK instances (`ClientSide`), setup and
teardown, the step loop, the sync markers that cut each step's events out of the streams, and the
check of a step's expectations.

What a step does is decided by the step modes, tried in order until one maps the step: the tab
steps of a multi-client test (steps_tabs), then the watch steps and write acks of the run's watch
(steps_scripted or steps_backend), then the steps every mode maps alike (steps_common)."""
from __future__ import annotations

import json
import uuid
from collections import OrderedDict, defaultdict
from typing import TYPE_CHECKING, Optional

import requests
from sse import SSEClosed, SSEStream, SSETimeout

from .classify import STEP_EXPECTATION_KEYS, is_multi_client
from .errors import HarnessError, ServerGone, StepFailure
from .events import Event, Listener, actual_event, compare_events, expected_event
from .steps_backend import BackendWatch
from .steps_common import CommonSteps
from .steps_scripted import ScriptedWatch
from .steps_tabs import TabSteps
from .values import Names, query_label

if TYPE_CHECKING:
    from .driver import Replay

# The spec's database: its bloom filters hash these names.
SPEC_PROJECT = "test-project"

# The SDK sends at most this many writes at once; `numOutstandingWrites` counts those in flight
# (remote_store.ts MAX_PENDING_WRITES), while the edge client reports its whole queue.
MAX_PENDING_WRITES = 10

SYNC_TIMEOUT = 10.0  # seconds to wait for a sync marker on one stream
HTTP_TIMEOUT = 20.0


class ClientSide:
    """One SDK instance of a spec run: a client of its own or, in a multi-client test, one tab of
    the shared web persistence (`sharedWith`). What the runner keeps per instance lives here."""

    def __init__(self, run: "SpecRun", index: int):
        self.index = index
        self.client = run.client_base if index == 0 and not run.multi else f"{run.client_base}-{index}"
        self.cbase = f"{run.base}/clients/{self.client}"
        self.docs_prefix = f"{self.cbase}/v1/projects/{run.project}/databases/(default)/documents"
        self.listeners: "OrderedDict[str, Listener]" = OrderedDict()
        self.writes: list[dict] = []  # {"id", "keys", "state"}
        self.in_sync: list[SSEStream] = []
        self.in_sync_events = 0
        self.wfpw_done = 0
        self.wfpw_outstanding = 0
        self.wfpw_seen = 0
        # Sticky expectations (the runner checks them after every later step too).
        self.expected_targets = None
        self.expected_limbo = None
        self.expected_enqueued = None
        self.shut_down = False


def _side_attribute(name):
    return property(lambda self: getattr(self.side, name), lambda self, value: setattr(self.side, name, value))


class SpecRun:
    # What each SDK instance has of its own: the current step's instance's (`self.side`).
    client = _side_attribute("client")
    cbase = _side_attribute("cbase")
    docs_prefix = _side_attribute("docs_prefix")
    listeners = _side_attribute("listeners")
    writes = _side_attribute("writes")
    in_sync = _side_attribute("in_sync")
    in_sync_events = _side_attribute("in_sync_events")
    wfpw_seen = _side_attribute("wfpw_seen")
    expected_targets = _side_attribute("expected_targets")
    expected_limbo = _side_attribute("expected_limbo")
    expected_enqueued = _side_attribute("expected_enqueued")

    def __init__(self, replay: "Replay", file: str, name: str, spec: dict, mode: str, scripted: bool = False):
        self.r = replay
        self.file = file
        self.name = name
        self.spec = spec
        self.mode = mode
        # Scripted: watch steps and write acks go to the client's scripted watch, nothing to the
        # backend; the project is the spec's own, whose names its bloom filters hash.
        self.scripted = scripted
        uid = uuid.uuid4().hex[:10]
        self.project = SPEC_PROJECT if scripted else f"spec-{uid}"
        self.names = Names(self.project)
        self.http = requests.Session()
        self.base = replay.base_url
        self.backend_prefix = f"{self.base}/v1/projects/{self.project}/databases/(default)/documents"
        # A multi-client test's instances are tabs of one shared web persistence, each opened
        # at its first step (as the runner starts them), hidden as the runner's fake document.
        self.multi = is_multi_client(spec)
        self.persistence_key = f"spec-{uid}"
        self.sides: dict[int, ClientSide] = {}
        self.side = None
        self.client_base = f"spec-{uid}"
        self.step_index = -1
        self.log_lines: list[str] = []
        # The spec's write pipeline: keys of each not yet acknowledged/rejected write, in order
        # (both watch modes pop it at a write ack).
        self.spec_writes: list = []
        self.user = None  # the signed-in user (changeUser); other users' spec_writes are parked
        self.parked_writes: dict = {}
        # The step modes, tried in this order (see the module docstring).
        self.tab_steps = TabSteps(self) if self.multi else None
        self.watch_steps = ScriptedWatch(self) if scripted else BackendWatch(self)
        self.common_steps = CommonSteps(self)
        self.step_modes = [m for m in (self.tab_steps, self.watch_steps, self.common_steps) if m is not None]

    # -- http helpers ---------------------------------------------------------------------------
    def call(self, method, url, expect=(200,), **kw):
        kw.setdefault("timeout", HTTP_TIMEOUT)
        try:
            r = self.http.request(method, url, **kw)
        except requests.ConnectionError as e:
            raise ServerGone(f"server unreachable: {method} {url}: {e}") from None
        except requests.Timeout:
            raise StepFailure(f"{method} {url} did not answer within {kw['timeout']}s") from None
        if expect and r.status_code not in expect:
            raise StepFailure(f"{method} {url[len(self.base):]} -> {r.status_code}: {r.text[:300]}")
        return r

    def log(self, msg):
        self.log_lines.append(msg)
        if self.r.verbose >= 2:
            print("      " + msg, flush=True)

    # -- lifecycle ------------------------------------------------------------------------------
    def use_side(self, index: int):
        """The instance a step runs on, opened at its first step."""
        side = self.sides.get(index)
        if side is None:
            self.side = side = self.sides[index] = ClientSide(self, index)
            self.open_side(first=len(self.sides) == 1)
        self.side = side

    def setup(self):
        steps = self.spec.get("steps") or [{}]
        self.use_side(steps[0].get("clientIndex", 0))

    def open_side(self, first: bool):
        cfg = self.spec.get("config") or {}
        body = {"project": self.project, "database": "(default)", "persistence": self.mode}
        if self.multi:
            body.update({"platform": "web", "sharedWith": self.persistence_key, "visible": False})
        if self.mode == "memory":
            body["garbageCollector"] = "eager" if cfg.get("useEagerGCForMemory", True) else "lru"
        else:
            body["garbageCollector"] = "lru"
        r = self.call("PUT", self.cbase, expect=None, json=body)
        if r.status_code == 400 and "garbageCollector" in r.text:
            body.pop("garbageCollector")
            r = self.call("PUT", self.cbase, expect=None, json=body)
        if r.status_code not in (200, 201):
            raise StepFailure(f"PUT /clients/{self.client} -> {r.status_code}: {r.text[:300]}")
        if not first:
            return  # the gates are the shared persistence's, set by its first tab
        self.call("PUT", f"{self.cbase}/gates", json=self.watch_steps.gates(cfg))

    def teardown(self):
        urls = []
        for side in self.sides.values():
            for l in side.listeners.values():
                if l.stream is not None:
                    l.stream.close()
            side.listeners.clear()
            for stream in side.in_sync:
                stream.close()
            side.in_sync.clear()
            urls.append(side.cbase)
        if self.multi and self.sides:
            # Terminate a tab, clear the shared persistence from it, then forget the tabs.
            first = next(iter(self.sides.values())).cbase
            for url in (f"{first}:terminate", f"{first}:clearPersistence"):
                try:
                    self.http.request("POST", url, json={}, timeout=5)
                except requests.RequestException:
                    pass
        urls.append(f"{self.base}/emulator/v1/projects/{self.project}/databases/(default)/documents")
        for url in urls:
            try:
                self.http.request("DELETE", url, timeout=5)
            except requests.RequestException:
                pass
        self.http.close()

    def run(self) -> None:
        self.setup()
        for i, step in enumerate(self.spec["steps"]):
            self.step_index = i
            self.use_side(step.get("clientIndex", 0))
            action = next((k for k in step if k not in STEP_EXPECTATION_KEYS), "?")
            tab = f"[client {self.side.index}] " if self.multi else ""
            self.log(f"step {i}: {tab}{action} {json.dumps(step.get(action))[:160]}")
            try:
                self.do_step(step)
                self.check_step(step)
            except StepFailure as e:
                raise StepFailure(f"step {i} ({action}): {e}") from None

    def do_step(self, step: dict):
        for mode in self.step_modes:
            if mode.do_step(step):
                return
        raise HarnessError(f"unmapped step reached the runner: {sorted(step)}")

    def forget_session(self):
        # The SDK instance is gone: its listeners end and the callbacks of its writes never fire
        # in this runner (as in the JS runner, where the old sync engine's promises are dropped).
        for l in self.listeners.values():
            l.closing = True
        self.writes = []
        self.watch_steps.session_lost()
        if self.mode == "memory":
            self.spec_writes = []  # a memory mutation queue does not survive
            self.parked_writes = {}

    # -- collecting and checking ----------------------------------------------------------------
    def sync_marker(self) -> str:
        """Puts a fresh marker into every stream of the client; returns its token."""
        token = f"t{self.step_index}-{uuid.uuid4().hex[:8]}"
        self.call("POST", f"{self.cbase}/gates:sync", json={"token": token})
        return token

    def read_in_sync(self, stream: SSEStream, token: str) -> int:
        """The snapshotsInSync events an observer got before the marker `token`."""
        try:
            raw, _ = stream.read_until(lambda e: e.event == "sync" and _token(e) == token, timeout=SYNC_TIMEOUT)
        except SSEClosed as e:
            raw = e.events
        except SSETimeout:
            raise StepFailure(f"snapshotsInSync observer: no sync marker {token!r} within {SYNC_TIMEOUT}s") from None
        return sum(1 for e in raw if e.event == "snapshotsInSync")

    def collect_events(self) -> list[Event]:
        token = f"t{self.step_index}-{uuid.uuid4().hex[:8]}"
        open_ls = [l for l in self.listeners.values() if not l.done and not l.closing]
        r = self.call("POST", f"{self.cbase}/gates:sync", expect=None, json={"token": token})
        if (open_ls or self.in_sync) and r.status_code != 200:
            raise StepFailure(f"POST gates:sync -> {r.status_code}: {r.text[:200]}")
        for stream in self.in_sync:
            self.in_sync_events += self.read_in_sync(stream, token)
        events: list[Event] = []
        for l in list(self.listeners.values()):
            events.extend(l.pending_events)
            l.pending_events = []
            if l.done:
                continue
            closing = l.closing
            try:
                if closing:
                    raw = l.stream.read_to_end(timeout=SYNC_TIMEOUT)
                    l.done = True
                else:
                    raw, _ = l.stream.read_until(lambda e: e.event == "sync" and _token(e) == token,
                                                 timeout=SYNC_TIMEOUT)
            except SSEClosed as e:
                raw = e.events
                l.done = True
            except SSETimeout as e:
                what = "end" if closing else f"sync marker {token!r}"
                got = "; ".join(repr(x) for x in e.events[:5])
                raise StepFailure(f"listener {query_label(l.spec_query)}: no {what} within "
                                  f"{SYNC_TIMEOUT}s (events read: {got or 'none'})") from None
            for ev in raw:
                conv = actual_event(l, ev, self.names, self.log)
                if conv is not None:
                    events.append(conv)
                    if conv.error:
                        l.done = True
        # Listeners of a restarted/terminated instance are gone after their streams ended.
        for qk in [qk for qk, l in self.listeners.items() if l.closing]:
            self.listeners.pop(qk)
        return events

    def check_step(self, step: dict):
        events = self.collect_events()
        # Snapshot events, grouped per query in order (the runner sorts by canonical query id).
        expected = [expected_event(e) for e in step.get("expectedSnapshotEvents") or []]
        exp_by_q: dict = defaultdict(list)
        act_by_q: dict = defaultdict(list)
        for e in expected:
            exp_by_q[e.query].append(e)
        for a in events:
            act_by_q[a.query].append(a)
        problems = []
        for qk in list(OrderedDict.fromkeys(list(exp_by_q) + list(act_by_q))):
            exp, act = exp_by_q.get(qk, []), act_by_q.get(qk, [])
            label = query_label(json.loads(qk))
            if len(exp) != len(act):
                problems.append(f"query {label}: {len(act)} event(s), expected {len(exp)}"
                                + "".join(f"\n        expected: {e.describe()}" for e in exp)
                                + "".join(f"\n        actual:   {a.describe()}" for a in act))
                continue
            for n, (e, a) in enumerate(zip(exp, act)):
                msg = compare_events(e, a)
                if msg:
                    problems.append(f"query {label} event {n + 1}: {msg}")
        if problems:
            raise StepFailure("\n      ".join(problems))

        # The rest of the expected state, in the order the checks always ran (the first
        # failure is the one reported).
        es = step.get("expectedState") or {}
        self.watch_steps.check_state(es)
        self.common_steps.check_callbacks(es.get("userCallbacks"))
        if "indexes" in es:
            self.common_steps.check_indexes(es["indexes"])
        if self.tab_steps is not None:
            self.tab_steps.check_state(es)
            es = {k: v for k, v in es.items() if k != "isShutdown"}
        if "numOutstandingWrites" in es or "isShutdown" in es:
            r = self.call("GET", self.cbase)
            state = r.json()
            if "numOutstandingWrites" in es:
                n = state.get("pendingWrites")
                if isinstance(n, (list, dict)):
                    n = len(n)
                if not isinstance(n, int):
                    raise StepFailure(f"client state has no pendingWrites count: {r.text[:200]}")
                if min(n, MAX_PENDING_WRITES) != es["numOutstandingWrites"]:
                    raise StepFailure(f"pendingWrites {n} (expected {es['numOutstandingWrites']} in flight)")
            if "isShutdown" in es and bool(state.get("terminated")) != bool(es["isShutdown"]):
                raise StepFailure(f"terminated {state.get('terminated')} (expected {es['isShutdown']})")
        self.common_steps.check_wait_for_pending_writes(step.get("expectedWaitForPendingWritesEvents", 0) or 0)
        # As the runner: every step expects its count, none meaning 0.
        expected_in_sync = step.get("expectedSnapshotsInSyncEvents", 0) or 0
        got, self.in_sync_events = self.in_sync_events, 0
        if got != expected_in_sync:
            raise StepFailure(f"{got} snapshotsInSync event(s), expected {expected_in_sync}")


def _token(ev) -> Optional[str]:
    try:
        d = json.loads(ev.data) if ev.data else {}
        return d.get("token") if isinstance(d, dict) else d
    except ValueError:
        return ev.data.strip()
