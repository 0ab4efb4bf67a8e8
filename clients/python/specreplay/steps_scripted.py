"""The scripted watch: nothing reaches the backend. The client gets `PUT gates
{"scriptedWatch":true}` and every watch step becomes one `POST /clients/{id}/watch` message
shaped as the runner's encodeWatchChange sends it; a write ack releases the held write with the
spec's version as its commit time. After every step the runner's sticky `activeTargets`,
`activeLimboDocs` and `enqueuedLimboDocs` are checked against the client's `watch` state."""
from __future__ import annotations

from .errors import StepFailure
from .steps_common import WatchMode
from .values import spec_time, time_micros, to_fields


class ScriptedWatch(WatchMode):
    def gates(self, cfg: dict) -> dict:
        # The runner's default is no limit on concurrent limbo lookups.
        limit = cfg.get("maxConcurrentLimboResolutions") or 1000000
        return {"scriptedWatch": True, "holdWrites": True, "maxConcurrentLimboResolutions": limit}

    def watch(self, message: dict):
        self.run.call("POST", f"{self.run.cbase}/watch", json=message)

    def do_step(self, step: dict) -> bool:
        """Watch steps and write acks as the runner's encodeWatchChange sends them; False for
        the steps mapped the same way as without a scripted watch."""
        run = self.run

        def target_change(kind, ids, **extra):
            body = {"targetChangeType": kind, "targetIds": list(ids)}
            body.update({k: v for k, v in extra.items() if v is not None})
            self.watch({"targetChange": body})

        if "watchAck" in step:
            target_change("ADD", step["watchAck"])
        elif "watchCurrent" in step:
            ids, token = step["watchCurrent"]
            target_change("CURRENT", ids, resumeToken=token)
        elif "watchReset" in step:
            target_change("RESET", step["watchReset"])
        elif "watchRemove" in step:
            wr = step["watchRemove"]
            cause = wr.get("cause")
            target_change("REMOVE", wr.get("targetIds") or [],
                          cause={"code": cause["code"], "message": cause.get("message", "")} if cause else None)
        elif "watchEntity" in step:
            we = step["watchEntity"]
            targets, removed = we.get("targets") or [], we.get("removedTargets") or []
            docs = we.get("docs") or ([we["doc"]] if we.get("doc") else [])
            for d in docs:
                name = run.names.name(d["key"])
                if d.get("value") is not None:
                    self.watch({"documentChange": {
                        "document": {"name": name, "fields": to_fields(d["value"]),
                                     "createTime": spec_time(d.get("createTime", 0)),
                                     "updateTime": spec_time(d.get("version", 0))},
                        "targetIds": targets, "removedTargetIds": removed}})
                else:
                    # The runner's encoder drops `targets` of a deleted document.
                    self.watch({"documentDelete": {"document": name, "removedTargetIds": removed,
                                                   "readTime": spec_time(d.get("version", 0))}})
            if we.get("key"):
                self.watch({"documentRemove": {"document": run.names.name(we["key"]), "removedTargetIds": removed}})
        elif "watchFilter" in step:
            wf = step["watchFilter"]
            body = {"targetId": wf["targetIds"][0], "count": len(wf.get("keys") or [])}
            if wf.get("bloomFilter") is not None:
                body["unchangedNames"] = wf["bloomFilter"]
            self.watch({"filter": body})
        elif "watchSnapshot" in step:
            ws = step["watchSnapshot"]
            target_change("NO_CHANGE", ws.get("targetIds") or [], resumeToken=ws.get("resumeToken"),
                          readTime=spec_time(ws.get("version", 0)))
        elif "watchStreamClose" in step:
            err = step["watchStreamClose"].get("error") or {}
            # runBackoffTimer: the backoff elapses now and the stream reopens; else it stays
            # closed until something reopens it (a listen, the network, a user change).
            self.watch({"streamClose": {"error": {"code": err.get("code", 14), "message": err.get("message", "")},
                                        "reconnect": bool(step["watchStreamClose"].get("runBackoffTimer"))}})
        elif "writeAck" in step:
            ack = step["writeAck"]
            if run.spec_writes and not ack.get("keepInQueue"):
                run.spec_writes.pop(0)
            run.call("POST", f"{run.cbase}/gates:releaseWrite",
                     json={"count": 1, "commitTime": spec_time(ack.get("version", 0))})
        elif "runTimer" in step:
            run.call("POST", f"{run.cbase}:runTimer", json={"timer": step["runTimer"]})
        elif "failDatabase" in step:
            # The named local-store operations fail until healed (false).
            fd = step["failDatabase"]
            run.call("PUT", f"{run.cbase}/faults", json={"storage": fd if fd else False})
        elif "drainQueue" in step:
            pass
        else:
            return False
        return True

    def check_state(self, es: dict):
        """The sticky watch expectations: active targets (id, resume token, purpose), active and
        enqueued limbo documents, against the client's `watch` state."""
        run = self.run
        if "activeTargets" in es:
            run.expected_targets = es["activeTargets"]
        if "activeLimboDocs" in es:
            run.expected_limbo = sorted(es["activeLimboDocs"])
        if "enqueuedLimboDocs" in es:
            run.expected_enqueued = sorted(es["enqueuedLimboDocs"])
        if run.expected_targets is None and run.expected_limbo is None and run.expected_enqueued is None:
            return
        if run.multi and run.side.shut_down:
            return  # the runner checks a stopped instance no more
        r = run.call("GET", run.cbase, expect=None)
        if r.status_code != 200:
            return
        state = r.json()
        if state.get("terminated"):
            return
        watch = state.get("watch") or {}
        problems = []
        if run.expected_limbo is not None:
            got = sorted(run.names.key(n) for n in watch.get("limboDocuments") or [])
            if got != run.expected_limbo:
                problems.append(f"active limbo documents {got}, expected {run.expected_limbo}")
        if run.expected_enqueued is not None:
            got = sorted(run.names.key(n) for n in watch.get("enqueuedLimboDocuments") or [])
            if got != run.expected_enqueued:
                problems.append(f"enqueued limbo documents {got}, expected {run.expected_enqueued}")
        if run.expected_targets is not None:
            got = {str(t["targetId"]): t for t in watch.get("targets") or []}
            # As the runner: with the network off, or in a secondary tab, the instance's stream
            # asks for nothing, whatever is expected.
            online = (state.get("network") or {}).get("online", True)
            want = run.expected_targets if online and (state.get("tab") or {}).get("primary", True) else {}
            if sorted(got) != sorted(want, key=str):
                problems.append(f"active targets {sorted(got, key=int)}, expected {sorted(want, key=int)}")
            else:
                for tid, exp in want.items():
                    t = got[str(tid)]
                    if (exp.get("resumeToken") or "") != t.get("resumeToken", ""):
                        problems.append(f"target {tid} listened with resume token {t.get('resumeToken')!r}, "
                                        f"expected {exp.get('resumeToken') or ''!r}")
                    # Without a resume token the SDK asks from the version it read the target at
                    # (a bundle's named query): the request's readTime.
                    if int(exp.get("readTime") or 0) != time_micros(t.get("readTime")):
                        problems.append(f"target {tid} listened at read time {t.get('readTime')}, "
                                        f"expected {exp.get('readTime') or 0} µs")
                    purpose = exp.get("targetPurpose") or "TargetPurposeListen"
                    if purpose != t.get("purpose"):
                        problems.append(f"target {tid} listened for {t.get('purpose')}, expected {purpose}")
        if problems:
            raise StepFailure("; ".join(problems))
