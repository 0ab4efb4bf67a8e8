#!/usr/bin/env python3
"""Firegate on PostgreSQL (`--store`, docs/replicas.md): durable single-document commits over HTTP
against a plain one-row-per-transaction loop on the same PostgreSQL.

  firegate  wrk, 64 connections, each request a one-write :commit creating a new document; the
            server on a PostgreSQL database of its own (group commit: one fenced statement per
            run of waiting commits)
  reference pgbench, one client, each transaction one INSERT of a row with the same payload
            (autocommit, synchronous_commit on), over the same unix socket
  target    firegate ≥ 2× the reference; every acknowledged commit stored (counted in PostgreSQL)

PostgreSQL: FIREGATE_TEST_STORE (a database to create others from), else a throwaway cluster
started with scripts/postgres-test-cluster.sh. Exit 0 when the target is met, 1 when not, 2 when
the run failed (no PostgreSQL, wrk or pgbench: nothing is measured).

    python3 bench/postgres.py [--seconds 3] [--rounds 3] [--bin .build/release/firegate]
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgbench import REPO, BenchError, BenchPostgres, argument_parser, emit, free_port, wait_healthy  # noqa: E402

PAYLOAD = 200


def psql(url, sql):
    return subprocess.run(["psql", url, "-Atqc", sql], capture_output=True, text=True, check=True).stdout.strip()


def firegate_commits(binary, url, seconds):
    port = free_port()
    data = tempfile.mkdtemp(prefix="fg-bench-pg-")
    proc = subprocess.Popen([binary, "serve", "--host", "127.0.0.1", "--port", str(port), "--store", url, "--data-dir", data],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, proc)
        project = "bench-pg"
        target = f"{base}/v1/projects/{project}/databases/%28default%29/documents:commit"
        script = os.path.join(REPO, "bench/commit.lua")
        subprocess.run(["wrk", "-t2", "-c64", "-d1s", "-s", script, target, "--", project, "warm", str(PAYLOAD)],
                       capture_output=True, check=True)
        out = subprocess.run(["wrk", "-t2", "-c64", f"-d{seconds}s", "-s", script, target, "--", project, "commits", str(PAYLOAD)],
                             capture_output=True, text=True, check=True).stdout
        rate = float(re.search(r"Requests/sec:\s*([\d.]+)", out).group(1))
        done = int(re.search(r"(\d+) requests in", out).group(1))
        bad = int(m.group(1)) if (m := re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)) else 0
        errors = sum(int(x) for x in m.groups()) if (m := re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)) else 0
        stored = int(psql(url, "SELECT count(*) FROM fg_documents WHERE path LIKE 'commits/%'"))
        return rate, done, bad, errors, stored
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(data, ignore_errors=True)


def loop_commits(url, seconds):
    psql(url, "CREATE TABLE IF NOT EXISTS bench_rows (id bigserial PRIMARY KEY, n bigint, payload text)")
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as script:
        script.write(f"INSERT INTO bench_rows (n, payload) VALUES (1, repeat('x', {PAYLOAD}));\n")
    try:
        out = subprocess.run(["pgbench", "-n", "-c", "1", "-T", str(seconds), "-f", script.name, url],
                             capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(script.name)
    return float(re.search(r"tps = ([\d.]+)", out).group(1))


def main():
    ap = argument_parser(__doc__)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    for tool in ("wrk", "pgbench", "psql"):
        if not shutil.which(tool):
            print(f"{tool} is not installed: nothing measured")
            return 2
    try:
        postgres = BenchPostgres().__enter__()
    except BenchError as failure:
        print(failure)
        return 2
    try:
        ratios, rates, loops, complete = [], [], [], True
        for round_ in range(args.rounds):
            url = postgres.database()
            loop = loop_commits(url, args.seconds)
            rate, done, bad, errors, stored = firegate_commits(args.bin, url, args.seconds)
            ok = bad == 0 and errors == 0 and stored >= done
            complete &= ok
            rates.append(rate), loops.append(loop), ratios.append(rate / loop)
            print(f"  round {round_ + 1}: firegate {rate:,.0f} commits/s ({done} answered, {stored} stored, non-2xx {bad}, "
                  f"socket errors {errors}); one-row loop {loop:,.0f} txn/s; ratio {rate / loop:.2f}x")
            emit("pg_commit", round(rate, 1), "commits/s", ref=round(loop, 1))
        ratio = statistics.median(ratios)
        good = ratio >= 2.0 and complete
        print(f"durable commits on PostgreSQL: {statistics.median(rates):,.0f} commits/s vs one-row loop "
              f"{statistics.median(loops):,.0f} txn/s: {ratio:.2f}x (spread {min(ratios):.2f}–{max(ratios):.2f}), "
              f"target >= 2.00x  {'PASS' if good else 'MISS'}")
        return 0 if good else 1
    finally:
        postgres.__exit__(None, None, None)

if __name__ == "__main__":
    sys.exit(main())
