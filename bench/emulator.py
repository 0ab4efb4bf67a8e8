#!/usr/bin/env python3
"""bench/emulator.py — Firegate and the official Cloud Firestore emulator side by side, in the
same run, on the same machine, both in memory (Firegate on its default configuration).

Each figure is measured on both, one server after the other, in each round:
  start      exec to the first answer (Firegate /healthz, the emulator's root)
  get        document GET, keep-alive, wrk with 32 connections for --seconds
  commit     one-document commits (each a new document), wrk with 32 connections for --seconds
  query      runQuery over 10 000 documents (== on a field, orderBy, limit 10), median of 20
  rss        resident memory of a fresh process of each (the emulator's JVM process tree) after
             the same requests: 1 000 one-document commits and GETs, the 10 000 documents and the
             queries below (after the rate phases the faster server would hold far more documents)
  listen     1 000 gRPC Listen streams on one document (50 HTTP/2 connections, as
             bench/firestore_grpc.py opens them): a commit's start to each stream's receipt,
             p50 and p99 over --commits commits
Targets (issue 42): at least 20× its GET and commit rates, at most 1/4 of its memory, at most
1/10 of its start time; the fan-out is printed beside the emulator's (Firegate's own target,
p99 < 25 ms, is bench/firestore_grpc.py's row).

    python3 bench/emulator.py [--rounds 2] [--seconds 3] [--bin …]

Loopback only; every wait is bounded. Needs wrk (bench/run installs it) and the emulator
(package google-cloud-cli-firestore-emulator; FIRESTORE_EMULATOR_BIN names another launcher).
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "clients", "python"))
import fgbench  # noqa: E402
import firestore_grpc  # noqa: E402
import oracle  # noqa: E402

PROJECT = "side"
ROOT = f"/v1/projects/{PROJECT}/databases/(default)/documents"


def _post(base, path, body, timeout=60):
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "Authorization": "Bearer owner"})
    with urllib.request.urlopen(request, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


def _tree_rss_kib(pid: int) -> int:
    """VmRSS of a process and its descendants (the emulator's launcher starts a JVM)."""
    total, pids = 0, [pid]
    while pids:
        p = pids.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
            with open(f"/proc/{p}/task/{p}/children") as f:
                pids += [int(c) for c in f.read().split()]
        except (OSError, StopIteration):
            pass
    return total


def wrk(url, seconds, script=None, args=()):
    command = ["wrk", "-t2", "-c32", f"-d{seconds}s", "--latency"] + (["-s", script] if script else []) + [url]
    if args:
        command += ["--", *args]
    out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 30).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad and int(bad.group(1)) > 0:
        raise fgbench.BenchError(f"wrk saw {bad.group(1)} error answers from {url}")
    return rate


class Side:
    """One server: started, loaded, measured, stopped."""

    def __init__(self, kind, binary, listeners, commits):
        self.kind, self.binary = kind, binary
        self.listeners, self.commits = listeners, commits

    def start(self):
        t0 = time.perf_counter()
        if self.kind == "firegate":
            self.server = fgbench.Server(self.binary, PROJECT, durable=False, label="side").start()
            self.base, self.pid = self.server.base, self.server.proc.pid
        else:
            self.emulator = oracle.OfficialEmulator(self.binary)
            self.base, self.pid = self.emulator.base, self.emulator.proc.pid
        return (time.perf_counter() - t0) * 1000

    def stop(self):
        if self.kind == "firegate":
            self.server.stop()
        else:
            self.emulator.stop()

    def measure(self, seconds):
        figures = {"start": self.start()}
        try:
            _post(self.base, f"{ROOT}:commit", {"writes": [{"update": {"name": f"projects/{PROJECT}/databases/(default)/documents/c/d",
                                                                       "fields": {"n": {"integerValue": "1"}}}}]})
            figures["get"] = wrk(f"{self.base}{ROOT}/c/d", seconds)
            figures["commit"] = wrk(f"{self.base}{ROOT}:commit", seconds, os.path.join(HERE, "commit.lua"), (PROJECT, "commits", "200"))
        finally:
            self.stop()
        # The rates above leave the faster server with a hundred times the documents: memory is
        # compared on a fresh process of each after the same requests (the documents below, 1 000
        # one-document commits and 1 000 GETs of them, the queries).
        self.start()
        try:
            session = requests.Session()
            for i in range(1000):
                name = f"projects/{PROJECT}/databases/(default)/documents/commits/c{i}"
                assert session.post(f"{self.base}{ROOT}:commit", json={"writes": [{"update": {"name": name, "fields": {
                    "n": {"integerValue": str(i)}, "payload": {"stringValue": "x" * 200}}}}]}, timeout=60).status_code == 200
            for i in range(1000):
                assert session.get(f"{self.base}{ROOT}/commits/c{i}", timeout=60).status_code == 200
            for batch in range(20):
                _post(self.base, f"{ROOT}:commit", {"writes": [
                    {"update": {"name": f"projects/{PROJECT}/databases/(default)/documents/q/d{batch * 500 + i}",
                                "fields": {"k": {"integerValue": str((batch * 500 + i) % 10)}, "n": {"integerValue": str(i)}}}}
                    for i in range(500)]})
            query = {"structuredQuery": {"from": [{"collectionId": "q"}], "where": {"fieldFilter": {
                "field": {"fieldPath": "k"}, "op": "EQUAL", "value": {"integerValue": "3"}}},
                "orderBy": [{"field": {"fieldPath": "n"}}], "limit": 10}}
            times = []
            for _ in range(20):
                t0 = time.perf_counter()
                _post(self.base, f"{ROOT}:runQuery", query)
                times.append((time.perf_counter() - t0) * 1000)
            figures["query"] = statistics.median(times)
            time.sleep(1)
            figures["rss"] = _tree_rss_kib(self.pid) / 1024
            port = int(self.base.rsplit(":", 1)[1])
            endpoint = type("Endpoint", (), {"port": port, "base": self.base})
            figures["listen_p50"], figures["listen_p99"] = asyncio.run(
                firestore_grpc.listen_phase(endpoint, self.listeners, self.commits, connections=50))
        finally:
            self.stop()
        return figures


TARGETS = {"get": ("ratio", 20), "commit": ("ratio", 20), "rss": ("fraction", 0.25), "start": ("fraction", 0.1), "query": None,
           "listen_p50": None, "listen_p99": None}
UNITS = {"get": "req/s", "commit": "commits/s", "query": "ms", "rss": "MiB", "start": "ms", "listen_p50": "ms", "listen_p99": "ms"}


def main():
    ap = fgbench.argument_parser(__doc__)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--listeners", type=int, default=1000)
    ap.add_argument("--commits", type=int, default=5)
    args = ap.parse_args()
    fgbench.check_binary(args.bin, args.allow_debug)
    emulator = oracle.emulator_binary()
    if emulator is None:
        raise fgbench.BenchError("the official Firestore emulator is not installed (google-cloud-cli-firestore-emulator)")
    rows = {key: [] for key in TARGETS}
    for round_ in range(args.rounds):
        ours = Side("firegate", args.bin, args.listeners, args.commits).measure(args.seconds)
        theirs = Side("emulator", emulator, args.listeners, args.commits).measure(args.seconds)
        for key in TARGETS:
            rows[key].append((ours[key], theirs[key]))
            fgbench.emit(f"emulator_{key}", round(ours[key], 2), UNITS[key], ref=round(theirs[key], 2))
        fgbench.log(f"round {round_ + 1}: " + ", ".join(f"{k} {ours[k]:.1f} vs {theirs[k]:.1f}" for k in TARGETS))
    short = False
    fgbench.log("\nfigure       Firegate (median)   official emulator (median)   ratio   target")
    for key, target in TARGETS.items():
        ours = statistics.median(o for o, _ in rows[key])
        theirs = statistics.median(t for _, t in rows[key])
        ratio = ours / theirs if theirs else float("inf")
        verdict = ""
        if target:
            kind, bound = target
            ok = ratio >= bound if kind == "ratio" else ratio <= bound
            short |= not ok
            verdict = f"{'≥' if kind == 'ratio' else '≤'} {bound}: {'pass' if ok else 'SHORT'}"
        fgbench.log(f"{key:12} {ours:12.1f} {UNITS[key]:9} {theirs:14.1f} {UNITS[key]:12} {ratio:7.3f}   {verdict}")
    return 1 if short else 0


if __name__ == "__main__":
    fgbench.run_main(main)
