"""The spec's bundles (`loadBundle` steps): length-prefixed JSON elements naming the spec's own
project. The replay runs each test in a database of its own, so the names are moved there, and
the length prefixes and the metadata's totalBytes are counted again."""
from __future__ import annotations

import json

from .values import Names

SPEC_DATABASE = "projects/test-project/databases/(default)"


def elements(text: str) -> list[str]:
    """The bundle's elements' JSON texts, in order."""
    data, out, i = text.encode(), [], 0
    while i < len(data):
        j = data.index(b"{", i)
        length = int(data[i:j])
        out.append(data[j:j + length].decode())
        i = j + length
    return out


def rebase(text: str, names: Names) -> bytes:
    """The spec's bundle with its names in the run's database."""
    database = names.root[: -len("/documents")]
    parts = [json.loads(e.replace(SPEC_DATABASE, database)) for e in elements(text)]
    body = [json.dumps(p, separators=(",", ":")).encode() for p in parts[1:]]
    body = [str(len(b)).encode() + b for b in body]
    parts[0]["metadata"]["totalBytes"] = sum(len(b) for b in body)
    head = json.dumps(parts[0], separators=(",", ":")).encode()
    return str(len(head)).encode() + head + b"".join(body)
