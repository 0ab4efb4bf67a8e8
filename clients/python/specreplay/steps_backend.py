"""The backend-mapped watch: the client's watch and write gates are held for the whole test;
`watchEntity` documents become plain backend writes (Firestore REST on the same server),
`watchSnapshot` releases the watch gate (one consistent snapshot), `writeAck` releases the oldest
held write. The spec's view of the watch stream is kept here for the two adaptations that keep
the backend consistent with it (synthesized deletes, the echo of a write watch was ahead of)."""
from __future__ import annotations

from urllib.parse import quote

from .errors import StepFailure
from .steps_common import WatchMode
from .values import canon_fields, is_doc_path, structured_query, to_fields


class BackendWatch(WatchMode):
    def __init__(self, run):
        super().__init__(run)
        self.targets: dict = {}  # targetId -> {"query", "fresh", "acked", "sent": set(), "synthesized"}
        self.unsnapped: list = []  # (key, version) sent by watch since the last global snapshot
        self.watch_version: dict = {}  # key -> version watch delivered (at a global snapshot)

    def gates(self, cfg: dict) -> dict:
        return {"holdWatch": True, "holdWrites": True}

    def listened(self, ul: dict, expected_state: dict) -> None:
        at = (expected_state.get("activeTargets") or {}).get(str(ul.get("targetId")))
        self.targets[ul.get("targetId")] = {
            "query": ul["query"], "acked": False, "sent": set(), "synthesized": False,
            # Only a listen without a resume token gets the full result before CURRENT.
            "fresh": at is not None and not at.get("resumeToken"),
        }

    def unlistened(self, target_id) -> None:
        self.targets.pop(target_id, None)

    def session_lost(self) -> None:
        self.targets.clear()

    def do_step(self, step: dict) -> bool:
        run = self.run
        if "watchAck" in step:
            for tid in step["watchAck"]:
                t = self.targets.get(tid)
                if t is not None:
                    t["acked"] = True
                    t["sent"] = set()
        elif "watchEntity" in step:
            self.do_watch_entity(step["watchEntity"])
        elif "watchCurrent" in step:
            for tid in step["watchCurrent"][0]:
                t = self.targets.get(tid)
                if t is not None and t["fresh"] and t["acked"] and not t["synthesized"]:
                    t["synthesized"] = True
                    self.synthesize_deletes(t)
        elif "watchSnapshot" in step:
            if not step["watchSnapshot"].get("targetIds"):
                # Only a global (empty targetIds) snapshot makes the SDK raise events.
                run.call("POST", f"{run.cbase}/gates:releaseWatch", json={})
                for k, v in self.unsnapped:
                    self.watch_version[k] = max(v, self.watch_version.get(k, 0))
                self.unsnapped = []
                for t in self.targets.values():
                    if t["synthesized"]:
                        t["fresh"] = False  # the SDK now holds a resume token for it
        elif "writeAck" in step:
            ack = step["writeAck"]
            batch = run.spec_writes.pop(0) if run.spec_writes and not ack.get("keepInQueue") else []
            run.call("POST", f"{run.cbase}/gates:releaseWrite", json={"count": 1})
            version = ack.get("version", 0)
            if batch and all(self.watch_version.get(k, -1) >= version for k in batch):
                # Watch already delivered this write's result (at the ack's version) before the
                # ack. Here the held write only now reached the backend, at a newer version, so
                # deliver that echo too: the SDK then holds the same state as in the spec.
                run.log("watch echo of the acknowledged write released")
                run.call("POST", f"{run.cbase}/gates:releaseWatch", json={})
        elif any(k in step for k in ("watchRemove", "drainQueue")):
            pass  # the backend answers listens itself; the release at watchSnapshot delivers
        else:
            return False
        return True

    def do_watch_entity(self, we: dict):
        run = self.run
        docs = we.get("docs") or ([we["doc"]] if we.get("doc") else [])
        for d in docs:
            self.unsnapped.append((d["key"], d.get("version", 0)))
            for tid in we.get("targets") or []:
                if tid in self.targets:
                    self.targets[tid]["sent"].add(d["key"])
        if not docs:
            return  # key-only target removal: the backend's own query decides membership
        names = [run.names.name(d["key"]) for d in docs]
        r = run.call("POST", f"{run.backend_prefix}:batchGet", json={"documents": names})
        current = {}
        try:
            for item in r.json():
                if "found" in item:
                    current[item["found"]["name"]] = item["found"].get("fields", {}) or {}
                elif "missing" in item:
                    current[item["missing"]] = None
        except (ValueError, TypeError, AttributeError):
            raise StepFailure(f"backend batchGet answered {r.text[:200]}") from None
        writes = []
        for d, name in zip(docs, names):
            want = to_fields(d["value"]) if d.get("value") is not None else None
            have = current.get(name)
            if want is None:
                if have is not None:
                    writes.append({"delete": name})
            elif have is None or canon_fields(have) != canon_fields(want):
                writes.append({"update": {"name": name, "fields": want}})
        if writes:
            run.call("POST", f"{run.backend_prefix}:commit", json={"writes": writes})
            run.log(f"backend: {len(writes)} write(s)")

    def synthesize_deletes(self, t: dict):
        """A fresh target turned CURRENT: what watch sent since its ack is the whole result, so
        the documents of the query that watch did not send are gone on the server (the SDK
        synthesizes deletes for them). Delete those on the backend. Limit queries are left
        alone (documents outside the window exist without being sent)."""
        run = self.run
        q = t["query"]
        if isinstance(q, dict) and q.get("limit"):
            return
        path = q if isinstance(q, str) else q.get("path", "")
        if is_doc_path(path) and not (isinstance(q, dict) and q.get("collectionGroup")):
            candidates = [run.names.name(path.strip("/"))]
            r = run.call("POST", f"{run.backend_prefix}:batchGet", json={"documents": candidates})
            present = [i["found"]["name"] for i in r.json() if "found" in i]
        else:
            parent, sq, _ = structured_query(q, run.names)
            url = f"{run.backend_prefix}{'/' + quote(parent, safe='/') if parent else ''}:runQuery"
            r = run.call("POST", url, json={"structuredQuery": sq})
            present = [i["document"]["name"] for i in r.json() if isinstance(i, dict) and i.get("document")]
        gone = [n for n in present if run.names.key(n) not in t["sent"]]
        if gone:
            run.log(f"backend: synthesized delete of {', '.join(run.names.key(n) for n in gone)}")
            run.call("POST", f"{run.backend_prefix}:commit", json={"writes": [{"delete": n} for n in gone]})
