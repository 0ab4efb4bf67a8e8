#!/usr/bin/env python3
"""Start-to-healthy time (docs/benchmarks.md: < 50 ms, also with 100 000 documents on disk): starts the
release binary N times, in memory, on an empty data directory and on one holding documents, and
reports the time from exec to the first `/healthz` 200. Stored documents load in the background,
so with documents on disk it also reports the time from exec to the first document read (no
target: what a test suite's first read waits). Loopback only, bounded.

Knobs: BENCH_RUNS (10 starts per case), BENCH_DOCS (100000 documents on disk, written in commits
of 500 through the server itself), FIREGATE_BIN. With BENCH_JSON=1 (bench/run) it prints one
`@bench {json}` line per start: figures start_memory, start_empty, start_docs, start_docs_read (ms)."""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgbench import emit  # noqa: E402

BIN = os.environ.get("FIREGATE_BIN", ".build/release/firegate")
RUNS = int(os.environ.get("BENCH_RUNS", "10"))
DOCS = int(os.environ.get("BENCH_DOCS", "100000"))
TARGET_MS = 50.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=0.2) as r:
            return r.status == 200
    except OSError:
        return False


def start_once(args):
    port = free_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen([BIN, "serve", "--port", str(port), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - t0 < 10:
            if healthy(port):
                return (time.perf_counter() - t0) * 1000, port, proc, t0
            time.sleep(0.002)
        raise RuntimeError("not healthy within 10 s")
    except BaseException:
        proc.kill()
        raise


def first_read_ms(port, t0):
    """Milliseconds from exec (`t0`) until a stored document is read back."""
    url = f"http://127.0.0.1:{port}/v1/projects/bench/databases/(default)/documents/c/d{DOCS - 1}"
    with urllib.request.urlopen(url, timeout=30) as r:
        assert r.status == 200
    return (time.perf_counter() - t0) * 1000


def measure(label, args, seed=None, figure=None):
    times, reads = [], []
    for _ in range(RUNS):
        ms, port, proc, t0 = start_once(args)
        times.append(ms)
        if figure:
            emit(figure, round(ms, 2), "ms", docs=DOCS if figure == "start_docs" else 0)
        if figure == "start_docs":
            reads.append(first_read_ms(port, t0))
            emit("start_docs_read", round(reads[-1], 2), "ms", docs=DOCS)
        if seed and not seed.get("done"):
            seed["fn"](port)
            seed["done"] = True
        proc.terminate()
        proc.wait(timeout=10)
    print(f"{label:44s} median {statistics.median(times):6.1f} ms   max {max(times):6.1f} ms   (n={RUNS})")
    if reads:
        print(f"{'  first document read after the start':44s} median {statistics.median(reads):6.1f} ms   "
              f"max {max(reads):6.1f} ms   (n={RUNS})")
    return statistics.median(times)


def seed_documents(port, count=DOCS):
    writes = []
    for i in range(count):
        writes.append({"update": {"name": f"projects/bench/databases/(default)/documents/c/d{i}",
                                  "fields": {"n": {"integerValue": str(i)}}}})
        if len(writes) == 500:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/projects/bench/databases/(default)/documents:commit",
                                         data=__import__("json").dumps({"writes": writes}).encode(), method="POST")
            urllib.request.urlopen(req, timeout=30).read()
            writes = []


if __name__ == "__main__":
    if "/debug/" in os.path.realpath(BIN):
        sys.exit("refusing to benchmark a debug build")
    worst = measure("in memory", ["--in-memory"], figure="start_memory")
    with tempfile.TemporaryDirectory(dir="bench") as d:
        worst = max(worst, measure("empty data directory", ["--data-dir", d], figure="start_empty"))
        seed = {"fn": seed_documents}
        t = time.perf_counter()
        measure(f"data directory (writing {DOCS:,} documents)", ["--data-dir", d], seed=seed)
        print(f"    ({DOCS:,} documents written in {time.perf_counter() - t:.1f} s, starts included)")
        worst = max(worst, measure(f"data directory with {DOCS:,} documents", ["--data-dir", d], figure="start_docs"))
    print(f"target < {TARGET_MS:.0f} ms (worst median): {'PASS' if worst < TARGET_MS else 'MISS'}")
    sys.exit(0 if worst < TARGET_MS else 1)
