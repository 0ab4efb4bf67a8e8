"""Security rules beside the official emulator's real rules engine (issue 42; oracle.py):
generated rulesets × requests × identities, the decision (status) and the denial message
compared. A difference fails unless divergences.json explains it.

The rulesets are made from conditions a user writes — auth and custom claims, the stored and the
incoming document, `keys()`, `size()`, `hasAny`/`hasOnly`, `in`, `matches`, `get`/`exists`,
timestamps, functions with `let` bindings (one of them an error, as codelab-rules' is), `&&`,
`||`, `!` and `?:` — each rule a random combination (ORACLE_SEED, ORACLE_RULESETS).
"""
import base64
import json
import os
import random
import re
import uuid

import pytest
import requests

import oracle
from oracle import OWNER, Answer

SEED = int(os.environ.get("ORACLE_SEED", "4242"))
RULESETS = int(os.environ.get("ORACLE_RULESETS", "30"))
T = 30

ATOMS = [
    "request.auth != null",
    "request.auth.uid == 'alice'",
    "request.auth.uid == id",
    "request.auth.token.role == 'admin'",
    "isModerator()",
    "canRead()",
    "resource.data.owner == request.auth.uid",
    "resource.data.n > 1",
    "'x' in resource.data.tags",
    "resource.data.tags.hasAny(['y', 'z'])",
    "request.resource.data.n is int",
    "request.resource.data.n < 10",
    "request.resource.data.keys().hasOnly(['n', 'owner', 'tags'])",
    "request.resource.data.size() <= 2",
    "request.resource.data.owner == request.auth.uid",
    "id.matches('a.*')",
    "id.size() > 1",
    "exists(/databases/$(db)/documents/c/seed)",
    "get(/databases/$(db)/documents/c/seed).data.n == 1",
    "request.time > timestamp.date(2020, 1, 1)",
    "request.auth.token.email.matches('.*@example[.]com')",
    "resource.data.missing == 1",
    "true",
    "false",
]


def _condition(rng, depth=0):
    roll = rng.random()
    if depth >= 2 or roll < 0.45:
        return rng.choice(ATOMS)
    if roll < 0.65:
        return f"({_condition(rng, depth + 1)} && {_condition(rng, depth + 1)})"
    if roll < 0.85:
        return f"({_condition(rng, depth + 1)} || {_condition(rng, depth + 1)})"
    if roll < 0.93:
        return f"!({_condition(rng, depth + 1)})"
    return f"({_condition(rng, depth + 1)} ? {_condition(rng, depth + 1)} : {_condition(rng, depth + 1)})"


def ruleset(rng):
    rules = {method: _condition(rng) for method in ("get", "list", "create", "update", "delete")}
    return f"""rules_version = '2';
service cloud.firestore {{
  match /databases/{{db}}/documents {{
    function isModerator() {{
      let claim = request.auth.token.isModerator == true;
      return claim;
    }}
    function canRead() {{
      let isAuthor = resource.data.owner == request.auth.uid;
      let isModerator = request.auth.token.isModerator == true;
      return isAuthor || isModerator;
    }}
    match /c/{{id}} {{
      allow get: if {rules['get']};
      allow list: if {rules['list']};
      allow create: if {rules['create']};
      allow update: if {rules['update']};
      allow delete: if {rules['delete']};
    }}
  }}
}}
"""


def jwt(sub, **claims):
    def b64(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    return f"{b64({'alg': 'none', 'typ': 'JWT'})}.{b64({'sub': sub, 'user_id': sub, **claims})}."


IDENTITIES = {
    "nobody": {},
    "alice": {"Authorization": "Bearer " + jwt("alice", email="alice@example.com")},
    "bob": {"Authorization": "Bearer " + jwt("bob")},
    "admin-claim": {"Authorization": "Bearer " + jwt("carol", role="admin", isModerator=True)},
}

SEED_DOCS = {
    "seed": {"n": {"integerValue": "1"}},
    "alice": {"owner": {"stringValue": "alice"}, "n": {"integerValue": "2"},
              "tags": {"arrayValue": {"values": [{"stringValue": "x"}]}}},
    "b": {"owner": {"stringValue": "bob"}, "n": {"integerValue": "0"}, "tags": {"arrayValue": {"values": [{"stringValue": "y"}]}}},
}


def requests_to_try(rng, project):
    name = lambda d: f"projects/{project}/databases/(default)/documents/c/{d}"  # noqa: E731
    data = rng.choice([{"n": {"integerValue": "3"}, "owner": {"stringValue": "alice"}},
                       {"n": {"stringValue": "3"}}, {"n": {"integerValue": "30"}, "extra": {"booleanValue": True}}])
    return [
        ("GET", "c/alice", None, None),
        ("GET", "c/b", None, None),
        ("GET", "c/absent", None, None),
        ("POST", ":runQuery", {"structuredQuery": {"from": [{"collectionId": "c"}],
                                                   "where": {"fieldFilter": {"field": {"fieldPath": "owner"}, "op": "EQUAL",
                                                                             "value": {"stringValue": "alice"}}}}}, None),
        ("PATCH", "c/anew", {"fields": data}, None),
        ("PATCH", "c/alice", {"fields": data}, None),
        ("DELETE", "c/b", None, None),
        ("POST", ":commit", {"writes": [{"update": {"name": name("alice"), "fields": data}}, {"delete": name("b")}]}, None),
    ]


def _decision(answer: Answer):
    """What the rules decided, as the caller sees it: allowed (any 2xx or a 404 read), or the
    denial's status."""
    if answer.status < 300 or answer.status == 404:
        return ("allowed",)
    return ("denied", answer.status, (answer.error or {}).get("status"))


def _message_items(answer: Answer):
    """The allows a denial names: each item's "for '<method>' @ L<line>"."""
    return set(re.findall(r"for '[a-z]+' @ L\d+", (answer.error or {}).get("message") or ""))


def _messages_agree(ours: Answer, theirs: Answer) -> bool:
    """divergences.json "rules-denial-lists-absorbed-errors": each allow Firegate's denial names
    is one the emulator's names (it names more, and says what went wrong differently)."""
    if ours.status < 300 or ours.status == 404:
        return True
    return _message_items(ours) <= _message_items(theirs)


def test_generated_rulesets_decide_as_the_real_rules_engine(base_url, firestore_emulator):
    emulator = firestore_emulator
    rng = random.Random(SEED)
    project = "rules-" + uuid.uuid4().hex[:8]
    roots = {"firegate": f"{base_url}/v1/projects/{project}/databases/(default)/documents",
             "emulator": f"{emulator.base}/v1/projects/{project}/databases/(default)/documents"}
    rules_urls = {"firegate": f"{base_url}/emulator/v1/projects/{project}:securityRules",
                  "emulator": f"{emulator.base}/emulator/v1/projects/{project}:securityRules"}
    compared = 0
    try:
        compared = _compare(rng, project, roots, rules_urls)
    finally:
        # The session's server is shared: rules left loaded would send other tests' requests
        # the judged way.
        for url in rules_urls.values():
            requests.delete(url, timeout=T)
    assert compared == RULESETS * len(IDENTITIES) * 8


def _compare(rng, project, roots, rules_urls):
    compared = 0
    for number in range(RULESETS):
        source = ruleset(rng)
        for side in ("firegate", "emulator"):
            r = requests.put(rules_urls[side], json={"rules": {"files": [{"name": "firestore.rules", "content": source}]}}, timeout=T)
            assert r.status_code == 200, (side, r.text, source)
            for doc, fields in SEED_DOCS.items():
                assert requests.patch(f"{roots[side]}/c/{doc}", json={"fields": fields}, headers=OWNER, timeout=T).status_code == 200
            requests.delete(f"{roots[side]}/c/anew", headers=OWNER, timeout=T)
        for who, headers in IDENTITIES.items():
            for method, resource, body, params in requests_to_try(rng, project):
                answers = []
                for side in ("firegate", "emulator"):
                    url = roots[side] + ("/" + resource if not resource.startswith(":") else resource)
                    answers.append(Answer(requests.request(method, url, json=body, params=params, headers=headers, timeout=T)))
                    if method != "GET" and resource != ":runQuery":
                        # Put the data back for the other side and the next request.
                        for doc, fields in SEED_DOCS.items():
                            requests.patch(f"{roots[side]}/c/{doc}", json={"fields": fields}, headers=OWNER, timeout=T)
                        requests.delete(f"{roots[side]}/c/anew", headers=OWNER, timeout=T)
                ours, theirs = answers
                compared += 1
                request = {"ruleset": number, "identity": who, "method": method, "resource": resource, "body": body}
                if _decision(ours) != _decision(theirs):
                    if oracle.explained("rules", request, ours, theirs) is None:
                        pytest.fail(oracle.repro("rules", request, ours, theirs, setup={"seed": SEED, "rules": source}))
                elif not _messages_agree(ours, theirs):
                    pytest.fail(oracle.repro("rules-message", request, ours, theirs, setup={"seed": SEED, "rules": source}))
    return compared
