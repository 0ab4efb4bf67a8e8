#!/usr/bin/env python3
"""Replays the Firestore SDK team's JSON spec tests against Firegate's edge clients.

    python3 clients/python/spec_replay.py --base-url http://127.0.0.1:8080 [--file write] [--test NAME] [-v]

How the steps map onto HTTP calls, what is compared, which tests run and the exit status are in
SPEC_REPLAY.md beside this file; the replay itself is the package specreplay/. This is its
command line, and it re-exports the names test_spec_replay.py and other callers use.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import requests

# The package and its sibling modules (sse) resolve however this file is run or imported.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from specreplay.classify import SCRIPTED_REASONS, classify, is_multi_client  # noqa: E402
from specreplay.driver import MODES, Replay, Result  # noqa: E402
from specreplay.errors import GRPC_CODES, HarnessError, ServerGone, StepFailure  # noqa: E402
from specreplay.events import Change, Event, compare_events, expected_event  # noqa: E402
from specreplay.files import DEFAULT_FILES, find_spec_dir  # noqa: E402
from specreplay.matching import doc_matches, get_field  # noqa: E402
from specreplay.run import SpecRun  # noqa: E402
from specreplay.values import (Names, canon_fields, canon_value, patch_body, plain_fields,  # noqa: E402
                               plain_value, query_key, query_label, spec_time, structured_query,
                               to_fields, to_value)

# What `import spec_replay` offers: the names the single-file spec_replay.py had that callers
# use (test_spec_replay.py: Replay, find_spec_dir and the mapping helpers).
__all__ = [
    "main", "Replay", "Result", "MODES", "DEFAULT_FILES", "find_spec_dir", "SpecRun",
    "classify", "is_multi_client", "SCRIPTED_REASONS",
    "HarnessError", "ServerGone", "StepFailure", "GRPC_CODES",
    "Change", "Event", "expected_event", "compare_events", "doc_matches", "get_field",
    "Names", "to_value", "to_fields", "canon_value", "canon_fields", "plain_value", "plain_fields",
    "query_key", "query_label", "spec_time", "structured_query", "patch_body",
]

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", default=os.environ.get("FIREGATE_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--spec-dir", default=None)
    ap.add_argument("--file", action="append", default=[],
                    help="spec file short name (write, listen, …); repeatable or comma-separated; "
                         "default: " + ",".join(DEFAULT_FILES) + "; 'all' for every file")
    ap.add_argument("--test", default=None, help="test name (exact, else case-insensitive substring)")
    ap.add_argument("--mode", choices=("both",) + MODES, default="both")
    ap.add_argument("--watch", choices=("auto", "scripted", "backend"), default="auto",
                    help="how watch steps reach the client: a scripted watch, backend writes, or "
                         "backend writes where they can stand in and a scripted watch elsewhere (auto)")
    ap.add_argument("-v", "--verbose", action="count", default=0,
                    help="-v: print the step log of failures; -vv: log every step live")
    args = ap.parse_args(argv)

    files = [f for arg in args.file for f in arg.split(",") if f] or list(DEFAULT_FILES)
    try:
        replay = Replay(args.base_url, args.spec_dir, args.verbose,
                        MODES if args.mode == "both" else (args.mode,), watch=args.watch)
    except FileNotFoundError as e:
        print(f"spec replay: {e}", file=sys.stderr)
        return 2
    try:
        requests.get(replay.base_url + "/healthz", timeout=5).raise_for_status()
    except requests.RequestException as e:
        print(f"spec replay: server at {replay.base_url} is not healthy: {e}", file=sys.stderr)
        return 2
    try:
        replay.run_files(files, args.test)
    except ServerGone as e:
        print(f"\nspec replay: stopped: {e}", file=sys.stderr)
        print(replay.table())
        print(replay.final_line())
        return 2
    print()
    print(replay.table())
    print(replay.final_line())
    total = replay.summary()["total"]
    return 2 if total["ERROR"] else (1 if total["FAIL"] else 0)


if __name__ == "__main__":
    sys.exit(main())
