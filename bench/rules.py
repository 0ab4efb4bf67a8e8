#!/usr/bin/env python3
"""bench/rules.py — what security rules cost (issue 26), on 127.0.0.1, servers at their defaults:

  (a) document GET under a typical ruleset (an auth check and one get() of another document)
      vs the same GET on a server without rules: h2load --h1, 64 connections, the same signed-in
      user's token on both, alternating rounds (--rounds).                   target ≥ 0.7×
  (b) durable one-document commits under the ruleset (an auth check and a field check) vs the
      same commits without rules, h2load --h1 both ways, data dir (fsync'd).   target ≥ 0.8×
  (c) loading (parse + check) a 500-line ruleset: PUT …:securityRules round trip, median of
      --loads loads.                                                          target < 50 ms

Prints `@bench` lines with BENCH_JSON=1 (bench/run): rules_get (ref norules_get), rules_commit
(ref norules_commit), rules_load_ms. Needs h2load (nghttp2-client).
"""
import base64
import json
import os
import shutil
import statistics
import tempfile
import time
import urllib.request

import fgbench
from fgbench import BenchError, Server, emit, log
from firestore_grpc import alternating, h2load, put_doc

PROJECT = "bench"
DB = f"projects/{PROJECT}/databases/(default)"

TYPICAL = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /rooms/{room} {
      allow read: if request.auth != null
                  && request.auth.uid in get(/databases/$(database)/documents/members/$(room)).data.uids;
      allow write: if request.auth != null && request.resource.data.payload is string;
    }
  }
}
"""


def token(uid):
    def b64(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    return f"{b64({'alg': 'none', 'type': 'JWT'})}.{b64({'sub': uid, 'user_id': uid})}."


def put_rules(server, source):
    body = json.dumps({"rules": {"files": [{"content": source}]}}).encode()
    req = urllib.request.Request(f"{server.base}/emulator/v1/projects/{PROJECT}:securityRules", data=body, method="PUT",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        answer = json.loads(r.read())
    if any(issue["severity"] == "ERROR" for issue in answer.get("issues", [])):
        raise BenchError(f"the ruleset did not load: {answer}")


def seed(server):
    put_doc(server, "members/r1", {"uids": {"arrayValue": {"values": [{"stringValue": "alice"}]}}})
    put_doc(server, "rooms/r1", {"payload": {"stringValue": "x" * 100}})


def get_rate(server, seconds):
    return h2load(["--h1", "-H", f"authorization: Bearer {token('alice')}", f"{server.base}/v1/{DB}/documents/rooms/r1"],
                  seconds, 64, 1)


def commit_rate(server, body_path, seconds):
    return h2load(["--h1", "-H", "content-type: application/json", "-H", f"authorization: Bearer {token('alice')}",
                   "-d", body_path, f"{server.base}/v1/{DB}/documents:commit"], seconds, 64, 1)


def large_ruleset(lines):
    """A ruleset of about `lines` lines: functions and nested matches of the usual kinds."""
    out = ["rules_version = '2';", "service cloud.firestore {", "  match /databases/{database}/documents {"]
    i = 0
    while len(out) < lines - 3:
        out += [
            f"    function owns{i}(data) {{",
            f"      let owner = data.get('owner', null);",
            f"      return request.auth != null && owner == request.auth.uid && data.keys().hasAll(['owner', 'n{i}']);",
            "    }",
            f"    match /c{i}/{{doc}} {{",
            f"      allow read: if owns{i}(resource.data) || request.auth.token.get('role', '') == 'admin';",
            f"      allow create: if owns{i}(request.resource.data) && request.resource.data.n{i} is int",
            f"                    && request.resource.data.n{i} >= 0 && request.resource.data.n{i} < {i + 10};",
            f"      allow update: if owns{i}(resource.data) && request.resource.data.diff(resource.data).affectedKeys().hasOnly(['n{i}']);",
            f"      allow delete: if owns{i}(resource.data) && request.time < resource.data.get('until', request.time + duration.value(1, 'd'));",
            f"      match /items/{{item}} {{ allow read, write: if exists(/databases/$(database)/documents/c{i}/$(doc)) && item.matches('^[a-z]+$'); }}",
            "    }",
        ]
        i += 1
    return "\n".join(out + ["  }", "}", ""])


async def main():
    ap = fgbench.argument_parser(__doc__)
    ap.add_argument("--seconds", type=int, default=3, help="each way, per round")
    ap.add_argument("--rounds", type=int, default=4, help="alternating rounds")
    ap.add_argument("--loads", type=int, default=15, help="loads of the 500-line ruleset")
    args = ap.parse_args()
    fgbench.check_binary(args.bin, args.allow_debug)
    if not shutil.which("h2load"):
        raise BenchError("h2load is missing (apt-get install nghttp2-client)")
    fgbench.raise_nofile(65536)
    os.makedirs(os.path.join(fgbench.REPO, "bench", "out"), exist_ok=True)
    work = tempfile.mkdtemp(prefix="rules.", dir=os.path.join(fgbench.REPO, "bench", "out"))
    status = 0

    plain = Server(args.bin, PROJECT, durable=False, label="norules").start()
    ruled = Server(args.bin, PROJECT, durable=False, label="rules").start()
    try:
        seed(plain)
        seed(ruled)
        put_rules(ruled, TYPICAL)
        rules_get, plain_get = alternating(lambda s: get_rate(ruled, s), lambda s: get_rate(plain, s), args.seconds, args.rounds)
        source = large_ruleset(500)
        times = []
        for _ in range(args.loads):
            t0 = time.perf_counter()
            put_rules(ruled, source)
            times.append((time.perf_counter() - t0) * 1000)
        load_ms = statistics.median(times)
    finally:
        plain.stop()
        ruled.stop()
    log(f"document GET under rules (auth + one get()): {rules_get:,.0f} req/s; without rules: {plain_get:,.0f} req/s; "
        f"ratio {rules_get / plain_get:.2f}× (target ≥ 0.7×)")
    emit("rules_get", rules_get, "req/s", ref=plain_get)
    status |= rules_get / plain_get < 0.7
    log(f"load (parse + check) of a {source.count(chr(10))}-line ruleset: median {load_ms:.1f} ms over {args.loads} "
        f"(min {min(times):.1f}, max {max(times):.1f}) (target < 50 ms)")
    emit("rules_load_ms", load_ms, "ms")
    status |= load_ms >= 50

    body = os.path.join(work, "commit.json")
    with open(body, "w") as f:
        json.dump({"writes": [{"update": {"name": f"{DB}/documents/rooms/c1", "fields": {"payload": {"stringValue": "y" * 200}}}}]}, f)
    plain = Server(args.bin, PROJECT, durable=True, label="norules-commit").start()
    ruled = Server(args.bin, PROJECT, durable=True, label="rules-commit").start()
    try:
        put_rules(ruled, TYPICAL)
        rules_commit, plain_commit = alternating(lambda s: commit_rate(ruled, body, s), lambda s: commit_rate(plain, body, s),
                                                 args.seconds, args.rounds)
    finally:
        plain.stop()
        ruled.stop()
    log(f"durable commits under rules: {rules_commit:,.0f}/s; without rules: {plain_commit:,.0f}/s; "
        f"ratio {rules_commit / plain_commit:.2f}× (target ≥ 0.8×)")
    emit("rules_commit", rules_commit, "commits/s", ref=plain_commit)
    status |= rules_commit / plain_commit < 0.8
    return int(status)


if __name__ == "__main__":
    fgbench.run_script(main, 300)
