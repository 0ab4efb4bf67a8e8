"""The steps every watch mode maps alike: the app's calls on the SDK (listen and unlisten,
writes, snapshotsInSync observers, network on/off, restart, shutdown, user changes,
waitForPendingWrites, index configuration, LRU collection), a rejected write, and the checks of
their expectations (write callbacks, waitForPendingWrites completions, indexes).

Also the base classes of the step modes: `StepMode` (maps the steps it knows, checks what it
expects) and `WatchMode` (how watch steps and write acks reach the client)."""
from __future__ import annotations

import http.client
import json
import threading
import time
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

import requests
from sse import SSEStream

from . import bundles
from .errors import GRPC_CODES, HarnessError, ServerGone, StepFailure
from .events import Event, Listener
from .values import is_doc_path, patch_body, query_key, query_label, structured_query, to_fields

if TYPE_CHECKING:
    from .run import SpecRun

WFPW_TIMEOUT_MS = 60000
WFPW_WAIT = 5.0  # seconds to wait for expected waitForPendingWrites completions
WFPW_GRACE = 0.1  # seconds to watch for unexpected completions


class StepMode:
    """One way of mapping steps, a strategy of its SpecRun: `do_step` answers False for a step
    it leaves to the next mode; `check_state` checks its part of a step's expected state."""

    def __init__(self, run: "SpecRun"):
        self.run = run

    def do_step(self, step: dict) -> bool:
        return False

    def check_state(self, es: dict) -> None:
        pass


class WatchMode(StepMode):
    """How watch steps and write acks reach the client, with the hooks the common steps call."""

    def gates(self, cfg: dict) -> dict:
        """The body of the first instance's `PUT /clients/{id}/gates`."""
        raise NotImplementedError

    def listened(self, ul: dict, expected_state: dict) -> None:
        """A userListen step opened a listener."""

    def unlistened(self, target_id) -> None:
        """A userUnlisten step closed one."""

    def session_lost(self) -> None:
        """The instance restarted or shut down: its targets are gone."""


class CommonSteps(StepMode):
    def __init__(self, run: "SpecRun"):
        super().__init__(run)
        self.wfpw_lock = threading.Lock()

    def do_step(self, step: dict) -> bool:
        run = self.run
        if "userListen" in step:
            self.do_listen(step["userListen"], step.get("expectedState") or {})
        elif "userUnlisten" in step:
            self.do_unlisten(step["userUnlisten"])
        elif "addSnapshotsInSyncListener" in step:
            run.in_sync.append(SSEStream(f"{run.cbase}/snapshotsInSync"))
        elif "removeSnapshotsInSyncListener" in step:
            if not run.in_sync:
                raise HarnessError("removeSnapshotsInSyncListener without an observer")
            # What it was told before it goes still counts.
            run.in_sync_events += run.read_in_sync(run.in_sync[-1], run.sync_marker())
            run.in_sync.pop().close()
        elif "userSet" in step:
            key, value = step["userSet"]
            self.do_write([{"update": {"name": run.names.name(key), "fields": to_fields(value)}}], [key])
        elif "userPatch" in step:
            key, value = step["userPatch"]
            self.do_write([patch_body(run.names, key, value)], [key])
        elif "userDelete" in step:
            key = step["userDelete"]
            self.do_write([{"delete": run.names.name(key)}], [key])
        elif "failWrite" in step:
            fw = step["failWrite"]
            if run.spec_writes and not fw.get("keepInQueue"):
                run.spec_writes.pop(0)
            code = fw["error"]["code"]
            run.call("POST", f"{run.cbase}/gates:releaseWrite", json={"fail": GRPC_CODES[code]})
        elif "enableNetwork" in step:
            run.call("POST", f"{run.cbase}:{'enableNetwork' if step['enableNetwork'] else 'disableNetwork'}",
                     json={})
        elif "restart" in step:
            run.call("POST", f"{run.cbase}:restart", json={})
            run.forget_session()
        elif "shutdown" in step:
            run.call("POST", f"{run.cbase}:terminate", json={})
            run.forget_session()
        elif "changeUser" in step:
            # A user change switches the client's mutation queue, as the SDK's does.
            if step["changeUser"] != run.user:
                run.parked_writes[run.user] = run.spec_writes
                run.user = step["changeUser"]
                run.spec_writes = run.parked_writes.pop(run.user, [])
            uid = step["changeUser"]
            run.call("PUT", f"{run.cbase}/auth", json={"uid": uid} if uid else {})
        elif "clearPersistence" in step:
            run.call("POST", f"{run.cbase}:clearPersistence", json={})
        elif "waitForPendingWrites" in step:
            self.start_wait_for_pending_writes()
        elif "setIndexConfiguration" in step:
            run.call("PUT", f"{run.cbase}/indexes", json=step["setIndexConfiguration"])
        elif "loadBundle" in step:
            run.call("POST", f"{run.cbase}:loadBundle", data=bundles.rebase(step["loadBundle"], run.names),
                     headers={"Content-Type": "application/octet-stream"})
        elif "triggerLruGC" in step:
            # The spec runner collects with LruParams(threshold, 100 %, no cap).
            run.call("POST", f"{run.cbase}:collectGarbage",
                     json={"thresholdBytes": step["triggerLruGC"], "percentile": 100})
        else:
            return False
        return True

    # -- listeners ------------------------------------------------------------------------------
    def do_listen(self, ul: dict, expected_state: dict):
        run = self.run
        q = ul["query"]
        opts = ul.get("options") or {}
        if opts.get("source") != "cache":
            run.watch_steps.listened(ul, expected_state)
        include_md = opts.get("includeMetadataChanges", True)
        params = {"includeMetadataChanges": "true" if include_md else "false"}
        if opts.get("source") == "cache":
            params["source"] = "cache"
        qk = query_key(q)
        path = q if isinstance(q, str) else q.get("path", "")
        is_doc = is_doc_path(path) and not (isinstance(q, dict) and q.get("collectionGroup"))
        if is_doc:
            url = f"{run.docs_prefix}/{quote(path.strip('/'), safe='/')}:listen"
        else:
            parent, sq, ltl = structured_query(q, run.names)
            url = f"{run.docs_prefix}{'/' + quote(parent, safe='/') if parent else ''}:listen"
            params["query"] = json.dumps(sq, separators=(",", ":"))
            if ltl:
                params["limitToLast"] = "true"
        if qk in run.listeners and not run.listeners[qk].done:
            if not run.multi:
                raise HarnessError(f"second listener for the same query {query_label(q)}")
            # As the runner's map of listeners by query: the newer one is what an unlisten
            # ends; the older one keeps raising events.
            run.listeners[f"{qk}#{len(run.listeners)}"] = run.listeners.pop(qk)
        try:
            stream = SSEStream(url, params=params, session=None)
        except requests.ConnectionError as e:
            raise ServerGone(f"server unreachable: {e}") from None
        l = Listener(q, ul.get("targetId"), stream, is_doc, qk)
        if not stream.ok:
            body = stream.error_json() or {}
            status = (body.get("error") or {}).get("status") if isinstance(body, dict) else None
            l.pending_events.append(Event(qk, error=status or f"HTTP {stream.status_code}",
                                          raw=stream.body))
            run.log(f"listen {query_label(q)} -> HTTP {stream.status_code} {stream.body[:200] if stream.body else ''}")
        run.listeners[qk] = l

    def do_unlisten(self, uu):
        run = self.run
        q = uu[1]
        qk = query_key(q)
        l = run.listeners.pop(qk, None)
        if l is None:
            raise HarnessError(f"unlisten of a query that is not listened to: {query_label(q)}")
        run.watch_steps.unlistened(uu[0])
        if l.stream is not None:
            l.stream.close()
        self.wait_listener_count()

    def wait_listener_count(self):
        """After closing a stream, waits until the client no longer counts that listener.

        A server may only notice a closed connection when it writes to it, so each round puts a
        sync marker (that no reader waits for) into the client's streams."""
        run = self.run
        want = sum(1 for side in run.sides.values() for l in side.listeners.values() if not l.done)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            run.call("POST", f"{run.cbase}/gates:sync", expect=None, json={"token": "unlisten-poke"})
            r = run.call("GET", run.cbase, expect=None)
            if r.status_code != 200:
                return
            try:
                n = r.json().get("listeners")
            except ValueError:
                return
            if isinstance(n, list):
                n = len(n)
            if not isinstance(n, int) or n <= want:
                return
            time.sleep(0.01)
        run.log("listener count did not drop after closing a stream")

    # -- writes ---------------------------------------------------------------------------------
    def do_write(self, writes: list, keys: list):
        run = self.run
        r = run.call("POST", f"{run.docs_prefix}:commit", expect=(200, 503), json={"writes": writes})
        if r.status_code == 503:
            # The local persistence refused it (failDatabase): rejected at once, never sent.
            run.writes.append({"id": None, "keys": keys, "state": "pending", "initial": "rejected"})
            return
        run.spec_writes.append(list(keys))
        wid = r.headers.get("Firegate-Write-Id")
        state = (r.headers.get("Firegate-Write-State") or "pending").lower()
        if not wid:
            raise StepFailure("commit through the client answered without a Firegate-Write-Id header")
        run.writes.append({"id": wid, "keys": keys, "state": "pending", "initial": state})

    def check_callbacks(self, expected):
        run = self.run
        acked, rejected = [], []
        for w in run.writes:
            if w["state"] != "pending":
                continue
            if w["initial"] in ("acknowledged", "rejected"):
                state = w["initial"]
            else:
                r = run.call("GET", f"{run.cbase}/pendingWrites/{quote(w['id'], safe='')}", expect=None)
                if r.status_code != 200:
                    raise StepFailure(f"GET pendingWrites/{w['id']} -> {r.status_code}: {r.text[:200]}")
                state = (r.json().get("state") or "").lower()
            if state in ("acknowledged", "rejected"):
                w["state"] = state
                (acked if state == "acknowledged" else rejected).extend(w["keys"])
        exp_acked = sorted((expected or {}).get("acknowledgedDocs") or [])
        exp_rejected = sorted((expected or {}).get("rejectedDocs") or [])
        if sorted(acked) != exp_acked or sorted(rejected) != exp_rejected:
            raise StepFailure(f"write callbacks: acknowledged {sorted(acked)} rejected {sorted(rejected)} "
                              f"(expected acknowledged {exp_acked} rejected {exp_rejected})")

    # -- waitForPendingWrites -------------------------------------------------------------------
    def start_wait_for_pending_writes(self):
        """Starts the long poll. The request is fully sent before this returns (only the answer
        is awaited on a thread), so the client registers it before the next step's calls."""
        u = urlsplit(f"{self.run.cbase}:waitForPendingWrites")
        path = f"{u.path}?timeoutMs={WFPW_TIMEOUT_MS}"
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=WFPW_TIMEOUT_MS / 1000 + 10)
        try:
            conn.request("POST", path, body=b"{}", headers={"Content-Type": "application/json"})
        except OSError as e:
            raise ServerGone(f"server unreachable: POST {path}: {e}") from None
        side = self.run.side
        with self.wfpw_lock:
            side.wfpw_outstanding += 1

        def wait():
            ok = False
            try:
                resp = conn.getresponse()
                resp.read()
                ok = resp.status == 200
            except (OSError, http.client.HTTPException):
                pass
            finally:
                conn.close()
            with self.wfpw_lock:
                side.wfpw_outstanding -= 1
                if ok:
                    side.wfpw_done += 1

        threading.Thread(target=wait, daemon=True, name="waitForPendingWrites").start()
        time.sleep(0.01)

    def check_wait_for_pending_writes(self, expected: int):
        run = self.run

        def done():
            with self.wfpw_lock:
                return run.side.wfpw_done - run.side.wfpw_seen, run.side.wfpw_outstanding

        got, outstanding = done()
        if expected > got:
            deadline = time.monotonic() + WFPW_WAIT
            while time.monotonic() < deadline:
                got, outstanding = done()
                if got >= expected:
                    break
                time.sleep(0.01)
        if outstanding and got == expected:
            time.sleep(WFPW_GRACE)
            got, outstanding = done()
        run.wfpw_seen += got
        if got != expected:
            raise StepFailure(f"{got} waitForPendingWrites completion(s), expected {expected}")

    # -- indexes --------------------------------------------------------------------------------
    def check_indexes(self, expected: list):
        """The client's field indexes against the runner's FieldIndex objects (collection
        group, segments and kinds). Like the runner it ignores `indexId`; it also ignores
        `indexState`, the SDK's backfill bookkeeping: Firegate builds an index at once."""
        kinds = {0: "ASCENDING", 1: "DESCENDING", 2: "CONTAINS"}
        want = sorted((i["collectionGroup"], tuple((".".join(f["fieldPath"]["segments"]), kinds[f["kind"]]) for f in i["fields"]))
                      for i in expected)
        got = []
        for i in self.run.call("GET", f"{self.run.cbase}/indexes").json().get("indexes") or []:
            fields = tuple((f["fieldPath"], f.get("order") or f.get("arrayConfig")) for f in i.get("fields") or [])
            got.append((i["collectionGroup"], fields))
        if sorted(got) != want:
            raise StepFailure(f"indexes {sorted(got)} (expected {want})")
