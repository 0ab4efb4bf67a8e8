#!/usr/bin/env python3
"""The Firebase CLI's workflow (docs/firebase-cli.md): how long `firegate exec -- true` takes from
start to exit (target < 200 ms), and how long `firegate exec --import DIR -- true` takes with a
100 000-document export (half of them in subcollections; target < 3 s). The reference for both is
the official Firestore emulator in the same run: its start to first answer, and its start with
`--seed_from_export` of the same export to the answer for the last document.

    python3 bench/firebase_cli.py [--runs 5] [--docs 100000]

With BENCH_JSON=1 (bench/run) it prints `@bench` lines: cli_exec (ms, ref: the emulator's start)
and cli_import (ms, ref: the emulator's seeded start). Loopback only; every wait is bounded.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "clients", "python"))
from fgbench import emit  # noqa: E402
import oracle  # noqa: E402

BIN = os.environ.get("FIREGATE_BIN", os.path.join(os.path.dirname(HERE), ".build/release/firegate"))
PROJECT = "demo-bench-cli"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body, timeout=120):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.loads(answer.read() or b"null")


def folder_with_config(root) -> str:
    """A project folder whose firebase.json asks for free ports (port 0), so runs never collide."""
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "firebase.json"), "w") as f:
        json.dump({"firestore": {}, "database": {}, "emulators": {"firestore": {"port": 0}, "database": {"port": 0}, "hub": {"port": 0}}}, f)
    return root


def timed_exec(folder, *args) -> float:
    started = time.perf_counter()
    # The server's default configuration (log level included), as users run it.
    done = subprocess.run([BIN, "exec", "-P", PROJECT, *args, "--", "true"], cwd=folder,
                          capture_output=True, text=True, timeout=120)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"firegate exec failed: {done.stderr}")
    return elapsed


def make_export(root, docs) -> str:
    """`docs` documents (half top-level, half one level down), written through a Firegate and
    exported with the Firestore emulator's own verb; the folder of the overall metadata file."""
    port = free_port()
    proc = subprocess.Popen([BIN, "serve", "--in-memory", "--port", str(port), "--project", PROJECT],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        root_path = f"projects/{PROJECT}/databases/(default)/documents"
        for start in range(0, docs, 500):
            writes = []
            for n in range(start, min(start + 500, docs)):
                path = f"items/i{n}" if n % 2 == 0 else f"items/i{n - 1}/parts/p{n}"
                writes.append({"update": {"name": f"{root_path}/{path}", "fields": {
                    "n": {"integerValue": str(n)}, "name": {"stringValue": f"item {n}"}, "price": {"doubleValue": n / 7},
                    "tags": {"arrayValue": {"values": [{"stringValue": "a"}, {"stringValue": "b"}]}},
                    "meta": {"mapValue": {"fields": {"created": {"timestampValue": "2024-01-01T00:00:00Z"}, "ok": {"booleanValue": True}}}}}}})
            post(f"{base}/v1/{root_path}:commit", {"writes": writes})
        out = os.path.join(root, "export")
        os.makedirs(out)
        post(f"{base}/emulator/v1/projects/{PROJECT}:export",
             {"database": f"projects/{PROJECT}/databases/(default)", "export_directory": out, "export_name": "firestore_export"})
        return os.path.join(out, "firestore_export")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def emulator_start(binary, *args, probe=None) -> float:
    """The official emulator's start to its first answer (to `probe` when given)."""
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen([binary, "start", "--host=127.0.0.1", f"--port={port}", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            try:
                url = f"http://127.0.0.1:{port}" + (probe or "/")
                with urllib.request.urlopen(url, timeout=5) as answer:
                    if answer.status == 200:
                        return (time.perf_counter() - started) * 1000
            except OSError:
                time.sleep(0.02)
        raise SystemExit("the official emulator did not answer in 300 s")
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--docs", type=int, default=100_000)
    options = parser.parse_args()
    emulator = oracle.emulator_binary()
    root = tempfile.mkdtemp(prefix="fg-bench-cli-")
    try:
        folder = folder_with_config(os.path.join(root, "project"))
        timed_exec(folder)  # warm the page cache
        execs = []
        for _ in range(options.runs):
            value = timed_exec(folder)
            ref = emulator_start(emulator) if emulator else None
            execs.append(value)
            emit("cli_exec", round(value, 1), "ms", **({"ref": round(ref, 1)} if ref else {}))
        print(f"firegate exec -- true: median {statistics.median(execs):.0f} ms (min {min(execs):.0f}, max {max(execs):.0f})")

        export = make_export(root, options.docs)
        last = options.docs - 1 if (options.docs - 1) % 2 == 0 else options.docs - 2
        probe = f"/v1/projects/{PROJECT}/databases/(default)/documents/items/i{last}"
        imports = []
        for _ in range(max(1, options.runs // 2)):
            value = timed_exec(folder, "--import", export)
            ref = emulator_start(emulator, f"--seed_from_export={export}/firestore_export.overall_export_metadata", probe=probe) if emulator else None
            imports.append(value)
            emit("cli_import", round(value, 1), "ms", **({"ref": round(ref, 1)} if ref else {}))
        print(f"firegate exec --import ({options.docs} documents) -- true: median {statistics.median(imports):.0f} ms "
              f"(min {min(imports):.0f}, max {max(imports):.0f})")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
