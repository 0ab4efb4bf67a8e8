"""Static classification: which spec tests map onto an edge client in a persistence mode, and
whether they need a scripted watch. A test is read step by step with a model of what the spec's
watch stream and write pipeline do; whatever a backend write cannot stand in for is a reason. A
scripted watch lifts the reasons in SCRIPTED_REASONS; any other reason skips the test."""
from __future__ import annotations

from collections import Counter, OrderedDict

from .matching import doc_matches

# Steps the backend mapping cannot express, with the reason reported (those whose reason is in
# SCRIPTED_REASONS run with a scripted watch; the rest are skipped).
STEP_REASONS = OrderedDict([
    ("watchFilter", "watchFilter (existence/bloom filter)"),
    ("watchReset", "watchReset (target reset)"),
    ("watchStreamClose", "watchStreamClose (watch stream error injection)"),
    ("loadBundle", "loadBundle (bundles)"),
    ("failDatabase", "failDatabase (persistence fault injection)"),
    ("applyClientState", "applyClientState (multi-tab)"),
    ("runTimer", "runTimer (SDK timers)"),
    ("watchUsesTargetIndex", "watchUsesTargetIndex (remote target ids)"),
])

# Reasons a scripted watch (`PUT /clients/{id}/gates {"scriptedWatch":true}`, then every watch
# step as `POST /clients/{id}/watch`) removes: the steps map one to one, so no backend write has to
# stand in for what watch says.
SCRIPTED_REASONS = {
    "watchFilter (existence/bloom filter)", "watchReset (target reset)",
    "watchStreamClose (watch stream error injection)",
    "watchRemove with a cause (listen rejected by the server)",
    "watch snapshot while a target is not CURRENT (partial snapshot)",
    "watch delivers an older version than already seen (version regression)",
    "write ack older than the watch's version of the document (concurrent remote write)",
    "watch messages for a re-listened target before its old removal is acknowledged",
    "watch sends a document that does not match its target's query",
    "limbo resolution expectations",
    "runTimer (SDK timers)",
    "failDatabase (persistence fault injection)",
    "multi-client",
    "applyClientState (multi-tab)",
    "loadBundle (bundles)",
}

KNOWN_ACTIONS = {
    "userListen", "userUnlisten", "userSet", "userPatch", "userDelete", "watchAck", "watchEntity",
    "watchCurrent", "watchSnapshot", "watchRemove", "writeAck", "failWrite", "enableNetwork",
    "restart", "shutdown", "clearPersistence", "waitForPendingWrites", "drainQueue", "triggerLruGC", "changeUser",
    "addSnapshotsInSyncListener", "removeSnapshotsInSyncListener", "setIndexConfiguration",
} | set(STEP_REASONS)

STEP_EXPECTATION_KEYS = {"clientIndex", "expectedSnapshotEvents", "expectedState",
                         "expectedSnapshotsInSyncEvents", "expectedWaitForPendingWritesEvents"}


def is_multi_client(spec: dict) -> bool:
    """A test of several web tabs sharing one persistence (the runner's multi-client tag)."""
    return "multi-client" in set(spec.get("tags") or []) or (spec.get("config") or {}).get("numClients", 1) > 1


def classify(spec: dict, mode: str) -> list[str]:
    """Reasons why this spec test cannot be replayed in this mode (empty: mappable)."""
    reasons: list[str] = []
    tags = set(spec.get("tags") or [])
    if is_multi_client(spec):
        # The SDK's runner runs multi-tab tests with persistence only (describe_spec.ts).
        reasons.append("multi-client (persistence only)" if mode == "memory" else "multi-client")
    if "no-web" in tags:
        reasons.append("no-web (the web SDK's runner skips it)")
    if "benchmark" in tags:
        reasons.append("benchmark")
    if mode == "persistent" and "eager-gc" in tags:
        reasons.append("eager-gc (memory persistence only)")
    if mode == "memory" and "durable-persistence" in tags:
        reasons.append("durable-persistence (persistent only)")

    active: dict = {}  # targetId -> {"cache": bool, "current": bool, "query": spec query}
    network = True
    write_queue: list[list[str]] = []
    user, parked_writes = None, {}  # the signed-in user; other users' queues
    known_version: dict = {}
    watch_version: dict = {}  # key -> version of the last global snapshot that carried it
    unsnapped: list = []
    unacked_removal: Counter = Counter()  # targetId -> unlistens whose watchRemove is pending
    partial = regress = outdated_ack = foreign_doc = stale_target = False

    def add(r):
        if r not in reasons:
            reasons.append(r)

    for step in spec["steps"]:
        if step.get("clientIndex", 0) != 0:
            add("multi-client")
        actions = [k for k in step if k not in STEP_EXPECTATION_KEYS]
        for a in actions:
            if a in STEP_REASONS:
                add(STEP_REASONS[a])
            elif a not in KNOWN_ACTIONS:
                add(f"unknown step {a}")
        es = step.get("expectedState") or {}
        if es.get("activeLimboDocs") or es.get("enqueuedLimboDocs"):
            add("limbo resolution expectations")
        if "numActiveClients" in es:
            add("multi-client")

        if "userListen" in step:
            ul = step["userListen"]
            cache = (ul.get("options") or {}).get("source") == "cache"
            active[ul["targetId"]] = {"cache": cache, "current": False, "query": ul["query"]}
        elif "userUnlisten" in step:
            t = active.pop(step["userUnlisten"][0], None)
            if t is not None and not t["cache"] and network:
                unacked_removal[step["userUnlisten"][0]] += 1
        elif "enableNetwork" in step:
            network = bool(step["enableNetwork"])
            if not network:
                unacked_removal.clear()
                for t in active.values():
                    t["current"] = False
        elif "changeUser" in step:
            if step["changeUser"] != user:
                parked_writes[user] = write_queue
                user = step["changeUser"]
                write_queue = parked_writes.pop(user, [])
        elif "restart" in step or "shutdown" in step:
            active.clear()
            unacked_removal.clear()
            if mode == "memory":
                write_queue.clear()
                parked_writes.clear()
        elif "watchCurrent" in step:
            for tid in step["watchCurrent"][0]:
                if unacked_removal[tid] and tid in active:
                    stale_target = True
                if tid in active:
                    active[tid]["current"] = True
        elif "watchRemove" in step:
            if step["watchRemove"].get("cause"):
                add("watchRemove with a cause (listen rejected by the server)")
            for tid in step["watchRemove"].get("targetIds") or []:
                if unacked_removal[tid]:
                    unacked_removal[tid] -= 1
        elif "watchAck" in step:
            if any(unacked_removal[tid] and tid in active for tid in step["watchAck"]):
                stale_target = True
        elif "watchEntity" in step:
            we = step["watchEntity"]
            docs = we.get("docs") or ([we["doc"]] if we.get("doc") else [])
            if any(unacked_removal[tid] and tid in active
                   for tid in (we.get("targets") or []) + (we.get("removedTargets") or [])):
                stale_target = True
            # A key-only removal from a target needs no backend write: the backend's own query
            # decides membership (e.g. a document pushed out of a limit).
            for d in docs:
                v = d.get("version", 0)
                if v < known_version.get(d["key"], 0):
                    regress = True
                known_version[d["key"]] = max(v, known_version.get(d["key"], 0))
                unsnapped.append((d["key"], v))
                if d.get("value") is not None:
                    for tid in we.get("targets") or []:
                        t = active.get(tid)
                        if t is not None and not doc_matches(t["query"], d["key"], d["value"]):
                            foreign_doc = True
        elif "watchSnapshot" in step:
            if not step["watchSnapshot"].get("targetIds") and network:
                if any(not t["cache"] and not t["current"] for t in active.values()):
                    partial = True
                for k, v in unsnapped:
                    watch_version[k] = max(v, watch_version.get(k, 0))
                unsnapped = []
        elif any(k in step for k in ("userSet", "userPatch", "userDelete")):
            if "userSet" in step:
                write_queue.append([step["userSet"][0]])
            elif "userPatch" in step:
                write_queue.append([step["userPatch"][0]])
            else:
                write_queue.append([step["userDelete"]])
        elif "writeAck" in step:
            if write_queue and not step["writeAck"].get("keepInQueue"):
                for k in write_queue.pop(0):
                    v = step["writeAck"].get("version", 0)
                    if watch_version.get(k, 0) > v:
                        outdated_ack = True
                    known_version[k] = max(known_version.get(k, 0), v)
        elif "failWrite" in step:
            if write_queue and not step["failWrite"].get("keepInQueue"):
                write_queue.pop(0)
    if partial:
        add("watch snapshot while a target is not CURRENT (partial snapshot)")
    if regress:
        add("watch delivers an older version than already seen (version regression)")
    if outdated_ack:
        add("write ack older than the watch's version of the document (concurrent remote write)")
    if stale_target:
        # The SDK ignores them until the watchRemove that acknowledges the unlisten; a backend
        # write cannot be addressed to the old incarnation of a re-listened target.
        add("watch messages for a re-listened target before its old removal is acknowledged")
    if foreign_doc:
        add("watch sends a document that does not match its target's query")
    return reasons
