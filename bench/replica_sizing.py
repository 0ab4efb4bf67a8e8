#!/usr/bin/env python3
"""What one replica holds in memory (docs/replicas.md "Sizing"): resident memory of an owner that
wrote 100 000 documents of ~300 bytes of JSON (200 commits of 500), and of a follower started
afterwards, which loads them, and the commit log's window as their history, from PostgreSQL.

  figures   owner and follower RSS (VmRSS once it stopped moving) against a replica with no data,
            per round; the median and spread over the rounds
  target    none: the figures size a deployment (docs/replicas.md)

PostgreSQL: FIREGATE_TEST_STORE (a database to create others from), else a throwaway cluster.

    python3 bench/replica_sizing.py [--rounds 3] [--documents 100000] [--bin .build/release/firegate]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time
import json
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgbench import BenchError, BenchPostgres, argument_parser, emit, free_port, wait_healthy  # noqa: E402


def start(binary, url, name):
    port = free_port()
    proc = subprocess.Popen([binary, "serve", "--host", "127.0.0.1", "--port", str(port), "--store", url, "--data-dir",
                             tempfile.mkdtemp(prefix="fg-bench-size-"), "--replica-id", name, "--cluster-secret", "bench"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    wait_healthy(base, proc, seconds=120)
    return proc, base


def rss_mib(proc):
    """VmRSS once two readings a second apart agree within 1 %."""
    last = None
    for _ in range(30):
        with open(f"/proc/{proc.pid}/status") as status:
            now = next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024
        if last and abs(now - last) <= last * 0.01:
            return now
        last = now
        time.sleep(1)
    return last


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        assert answer.status == 200


def round_(binary, url, documents):
    owner, base = start(binary, url, "a")
    procs = [owner]
    try:
        empty = rss_mib(owner)
        docs = "/v1/projects/size/databases/(default)/documents"
        payload = "x" * 250
        for commit in range(documents // 500):
            post(f"{base}{docs}:commit", {"writes": [
                {"update": {"name": f"projects/size/databases/(default)/documents/c/d{commit}-{i}",
                            "fields": {"p": {"stringValue": payload}, "n": {"integerValue": str(i)}}}} for i in range(500)]})
        written = rss_mib(owner)
        follower, _ = start(binary, url, "b")
        procs.append(follower)
        loaded = rss_mib(follower)
        return empty, written - empty, loaded - empty
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait()


def main():
    ap = argument_parser(__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--documents", type=int, default=100_000)
    args = ap.parse_args()
    try:
        postgres = BenchPostgres().__enter__()
    except BenchError as failure:
        print(failure)
        return 2
    try:
        rounds = []
        for n in range(args.rounds):
            empty, owner, follower = round_(args.bin, postgres.database(), args.documents)
            rounds.append((empty, owner, follower))
            print(f"  round {n + 1}: no data {empty:.1f} MiB; owner +{owner:.1f} MiB; follower +{follower:.1f} MiB")
            emit("replica_owner_memory", round(owner, 1), "MiB", documents=args.documents)
            emit("replica_follower_memory", round(follower, 1), "MiB", documents=args.documents)
        for label, index in (("no data", 0), ("owner", 1), ("follower", 2)):
            values = [r[index] for r in rounds]
            per = "" if index == 0 else f" ({statistics.median(values) * 1024 * 1024 / args.documents / 1024:.2f} KiB a document)"
            print(f"{label}: {statistics.median(values):.1f} MiB (spread {min(values):.1f}–{max(values):.1f}){per}")
        return 0
    except BenchError as failure:
        print(failure)
        return 2
    finally:
        postgres.__exit__(None, None, None)


if __name__ == "__main__":
    sys.exit(main())
