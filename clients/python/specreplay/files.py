"""The spec JSON files: where they are looked for, and their short names (`write`, `listen`…)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

# clients/python/specreplay/files.py → the repository's root.
REPO = Path(__file__).resolve().parents[3]
SPEC_DIR_CANDIDATES = [
    REPO / "conformance" / "firestore-spec",
    REPO / "clients" / "python" / "firestore-spec",
    # The steering repository's shared/ folder stands beside this repository's clone.
    REPO.parent / "shared" / "conformance" / "firestore-spec",
]

# The files the pytest wrapper replays (the ones with mappable tests).
DEFAULT_FILES = ["write", "listen", "limit", "persistence", "query", "collection", "orderby",
                 "listen_source", "offline"]


def find_spec_dir(explicit: Optional[str] = None) -> Path:
    cands = []
    if explicit:
        cands.append(Path(explicit))
    if os.environ.get("FIREGATE_SPEC_DIR"):
        cands.append(Path(os.environ["FIREGATE_SPEC_DIR"]))
    cands += SPEC_DIR_CANDIDATES
    for c in cands:
        if c.is_dir() and any(c.glob("*_spec_test.json")):
            return c
    raise FileNotFoundError("spec JSON not found; pass --spec-dir or set FIREGATE_SPEC_DIR "
                            f"(looked in: {', '.join(str(c) for c in cands)})")


def spec_file_path(spec_dir: Path, short: str) -> Path:
    p = spec_dir / f"{short}_spec_test.json"
    if not p.exists():
        p = spec_dir / short
    if not p.exists():
        raise FileNotFoundError(f"no spec file {short!r} in {spec_dir}")
    return p


def short_name(path: Path) -> str:
    n = path.name
    return n[: -len("_spec_test.json")] if n.endswith("_spec_test.json") else n
