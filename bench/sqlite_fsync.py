#!/usr/bin/env python3
"""Reference for bench/documents.sh: a plain SQLite loop doing one fsync'd transaction per row.

WAL journal, synchronous=FULL, one INSERT per BEGIN…COMMIT, for a fixed time, on the disk that
holds DB_PATH. Prints `rows_per_sec <n>` as its last line.

    python3 bench/sqlite_fsync.py DB_PATH [SECONDS] [PAYLOAD_BYTES]
"""
import sqlite3
import sys
import time


def main():
    path = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    payload = "x" * (int(sys.argv[3]) if len(sys.argv) > 3 else 200)
    db = sqlite3.connect(path, isolation_level=None)
    mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    assert mode.lower() == "wal", mode
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE IF NOT EXISTS docs (id TEXT PRIMARY KEY, n INTEGER, payload TEXT)")
    rows = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        db.execute("BEGIN")
        db.execute("INSERT INTO docs (id, n, payload) VALUES (?, ?, ?)", (f"d{rows:010d}", rows, payload))
        db.execute("COMMIT")
        rows += 1
    elapsed = time.perf_counter() - start
    (count,) = db.execute("SELECT count(*) FROM docs").fetchone()
    assert count == rows, (count, rows)
    db.close()
    print(f"rows {rows} in {elapsed:.2f}s (journal_mode=WAL, synchronous=FULL)")
    print(f"rows_per_sec {rows / elapsed:.1f}")


if __name__ == "__main__":
    main()
