"""Edge listeners follow backend commits incrementally (each target's match set takes the
commit's changes instead of re-running its query): a randomized run of writes and deletes under
listeners with filters, orderings, limits and limitToLast, checked after every commit against the
backend's own answer. Deterministic through the sync marker; the seed is printed."""
import json
import random

import requests

from sse import SSEStream
from test_edge import Client, docs_path, typed


def structured(order_desc, limit, lo):
    q = {"from": [{"collectionId": "w"}],
         "where": {"fieldFilter": {"field": {"fieldPath": "n"}, "op": "GREATER_THAN_OR_EQUAL",
                                   "value": {"integerValue": str(lo)}}},
         "orderBy": [{"field": {"fieldPath": "n"}, "direction": "DESCENDING" if order_desc else "ASCENDING"}]}
    if limit:
        q["limit"] = limit
    return q


def test_listeners_follow_random_commits_incrementally(base_url, project):
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    docs = f"{base_url}{docs_path(project)}"
    client = Client(base_url, project)
    shapes = [(False, None, 0), (True, 3, 2), (False, 2, 5), (True, None, 4)]
    streams, queries = [], []
    for desc, limit, lo in shapes:
        q = structured(desc, limit, lo)
        queries.append(q)
        streams.append(SSEStream(f"{client.data}:listen", params={"query": json.dumps(q)}))
    streams.append(SSEStream(f"{client.data}:listen", params={"query": json.dumps(structured(False, 2, 1)), "limitToLast": "true"}))
    queries.append(dict(structured(False, 2, 1), limitToLast=True))
    latest = [None] * len(streams)
    try:
        for step in range(60):
            doc = f"d{rng.randrange(12)}"
            if rng.random() < 0.25:
                requests.delete(f"{docs}/w/{doc}", timeout=10)
            else:
                r = requests.patch(f"{docs}/w/{doc}", json={"fields": {"n": typed(rng.randrange(10))}}, timeout=10)
                assert r.status_code == 200, r.text
            for i, events in enumerate(client.sync(*streams)):
                if events:
                    latest[i] = events[-1]
            for i, q in enumerate(queries):
                body = {k: v for k, v in q.items() if k != "limitToLast"}
                expected = requests.post(f"{docs}:runQuery", json={"structuredQuery": body}, timeout=10).json()
                names = [e["document"]["name"] for e in expected if "document" in e]
                if q.get("limitToLast"):
                    # The backend has no limitToLast: take the last `limit` of the unlimited order.
                    unlimited = {k: v for k, v in body.items() if k != "limit"}
                    all_names = [e["document"]["name"] for e in requests.post(
                        f"{docs}:runQuery", json={"structuredQuery": unlimited}, timeout=10).json() if "document" in e]
                    names = all_names[-q["limit"]:]
                got = [d["name"] for d in (latest[i] or {"documents": []})["documents"]]
                assert got == names, f"seed {seed}, step {step}, listener {i}: {got} != {names}"
                if latest[i] is not None:
                    assert latest[i]["metadata"] == {"fromCache": False, "hasPendingWrites": False}
    finally:
        for s in streams:
            s.close()
