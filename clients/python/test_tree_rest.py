"""REST details of the tree backend, checked with plain HTTP: methods, parameters, ETags,
server values, validation errors and namespaces."""
import json
import time

import requests


def url(base, path, ns):
    return f"{base}/{path}.json?ns={ns}"


def put(base, path, ns, value, **kw):
    return requests.put(url(base, path, ns), data=json.dumps(value), **kw)


def test_put_get_root_and_nested(base_url, namespace):
    r = put(base_url, "users/alan", namespace, {"name": "Alan", "born": 1912})
    assert r.status_code == 200
    assert r.json() == {"name": "Alan", "born": 1912}
    assert requests.get(url(base_url, "users/alan/name", namespace)).json() == "Alan"
    assert requests.get(url(base_url, "users", namespace)).json() == {"alan": {"name": "Alan", "born": 1912}}
    # `/a/b/.json` is the same location as `/a/b.json`
    assert requests.get(f"{base_url}/users/alan/.json?ns={namespace}").json()["born"] == 1912
    assert requests.get(url(base_url, "missing", namespace)).json() is None


def test_namespaces_are_isolated(base_url, namespace):
    put(base_url, "x", namespace, 1)
    assert requests.get(url(base_url, "x", namespace + "-other")).json() is None
    assert requests.get(f"{base_url}/x.json?ns={namespace}").json() == 1


def test_default_namespace_is_the_project(base_url):
    requests.put(f"{base_url}/default-ns-check.json", data="42")
    assert requests.get(f"{base_url}/default-ns-check.json?ns=demo-project").json() == 42
    requests.delete(f"{base_url}/default-ns-check.json")


def test_post_push_ids_are_ordered(base_url, namespace):
    names = [requests.post(url(base_url, "list", namespace), data=json.dumps(i)).json()["name"] for i in range(30)]
    assert all(len(n) == 20 for n in names)
    assert names == sorted(names)
    alphabet = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
    assert all(c in alphabet for n in names for c in n)
    stored = requests.get(url(base_url, "list", namespace)).json()
    assert list(stored.keys()) == names
    assert [stored[n] for n in names] == list(range(30))


def test_patch_shallow_merge_and_multipath(base_url, namespace):
    put(base_url, "users", namespace, {"alan": {"nick": "a", "x": 1}, "grace": {"nick": "g"}})
    r = requests.patch(url(base_url, "users", namespace), data=json.dumps({"alan/nick": "A", "grace/nick": "G"}))
    assert r.status_code == 200 and r.json() == {"alan/nick": "A", "grace/nick": "G"}
    assert requests.get(url(base_url, "users", namespace)).json() == {"alan": {"nick": "A", "x": 1}, "grace": {"nick": "G"}}
    # A plain key replaces the whole child
    requests.patch(url(base_url, "users", namespace), data=json.dumps({"alan": {"nick": "B"}}))
    assert requests.get(url(base_url, "users/alan", namespace)).json() == {"nick": "B"}
    # null deletes
    requests.patch(url(base_url, "users", namespace), data=json.dumps({"grace": None}))
    assert requests.get(url(base_url, "users", namespace)).json() == {"alan": {"nick": "B"}}


def test_patch_overlapping_paths_rejected(base_url, namespace):
    r = requests.patch(url(base_url, "a", namespace), data=json.dumps({"b": 1, "b/c": 2}))
    assert r.status_code == 400 and "error" in r.json()
    assert requests.get(url(base_url, "a", namespace)).json() is None


def test_delete_and_clear_namespace(base_url, namespace):
    put(base_url, "a/b", namespace, 1)
    put(base_url, "c", namespace, 2)
    r = requests.delete(url(base_url, "a/b", namespace))
    assert r.status_code == 200 and r.json() is None
    assert requests.get(url(base_url, "", namespace)).json() == {"c": 2}
    assert requests.delete(f"{base_url}/.json?ns={namespace}").status_code == 200
    assert requests.get(f"{base_url}/.json?ns={namespace}").json() is None


def test_method_override(base_url, namespace):
    put(base_url, "m", namespace, 1)
    r = requests.post(url(base_url, "m", namespace), headers={"X-HTTP-Method-Override": "DELETE"})
    assert r.status_code == 200
    assert requests.get(url(base_url, "m", namespace)).json() is None
    r = requests.post(url(base_url, "m", namespace) + "&x-http-method-override=PUT", data="5")
    assert r.json() == 5
    assert requests.get(url(base_url, "m", namespace)).json() == 5


def test_print_pretty_and_silent(base_url, namespace):
    r = put(base_url, "p", namespace, {"a": 1}, params={"print": "silent"})
    assert r.status_code == 204 and r.content == b""
    r = requests.get(url(base_url, "p", namespace) + "&print=pretty")
    assert r.text == '{\n  "a" : 1\n}'
    assert requests.get(url(base_url, "p", namespace) + "&print=silent").status_code == 204
    assert requests.get(url(base_url, "p", namespace) + "&print=loud").status_code == 400


def test_arrays_and_shallow(base_url, namespace):
    put(base_url, "arr", namespace, ["a", "b", None, "d"])
    assert requests.get(url(base_url, "arr", namespace)).json() == ["a", "b", None, "d"]
    put(base_url, "sparse", namespace, {"0": "a", "5": "b"})
    assert requests.get(url(base_url, "sparse", namespace)).json() == {"0": "a", "5": "b"}
    put(base_url, "obj", namespace, {"a": {"deep": 1}, "b": 2})
    assert requests.get(url(base_url, "obj", namespace) + "&shallow=true").json() == {"a": True, "b": True}
    assert requests.get(url(base_url, "obj/b", namespace) + "&shallow=true").json() == 2
    r = requests.get(url(base_url, "obj", namespace) + '&shallow=true&orderBy="$key"')
    assert r.status_code == 400 and "error" in r.json()


def test_priorities_and_export(base_url, namespace):
    put(base_url, "p", namespace, {"a": {".value": 1, ".priority": 5}, "b": {"x": 1, ".priority": "s"}})
    assert requests.get(url(base_url, "p", namespace)).json() == {"a": 1, "b": {"x": 1}}
    export = requests.get(url(base_url, "p", namespace) + "&format=export").json()
    assert export == {"a": {".value": 1, ".priority": 5}, "b": {"x": 1, ".priority": "s"}}
    assert requests.get(url(base_url, "p/a/.priority", namespace)).json() == 5
    requests.put(url(base_url, "p/b/.priority", namespace), data="7")
    assert requests.get(url(base_url, "p/b", namespace) + "&format=export").json() == {"x": 1, ".priority": 7}
    # arrays are never produced in export format
    put(base_url, "arr", namespace, [1, 2])
    assert requests.get(url(base_url, "arr", namespace) + "&format=export").json() == {"0": 1, "1": 2}


def test_server_values(base_url, namespace):
    before = int(time.time() * 1000)
    put(base_url, "t", namespace, {"at": {".sv": "timestamp"}, "n": {".sv": {"increment": 2}}})
    stored = requests.get(url(base_url, "t", namespace)).json()
    assert before - 1000 <= stored["at"] <= int(time.time() * 1000) + 1000
    assert stored["n"] == 2
    requests.patch(url(base_url, "t", namespace), data=json.dumps({"n": {".sv": {"increment": 3}}}))
    assert requests.get(url(base_url, "t/n", namespace)).json() == 5
    requests.put(url(base_url, "t/n", namespace), data=json.dumps({".sv": {"increment": 0.5}}))
    assert requests.get(url(base_url, "t/n", namespace)).json() == 5.5
    r = requests.put(url(base_url, "t/n", namespace), data=json.dumps({".sv": "nonsense"}))
    assert r.status_code == 400 and "error" in r.json()
    assert requests.get(url(base_url, "t/n", namespace)).json() == 5.5


def test_etags_and_conditional_writes(base_url, namespace):
    r = requests.get(url(base_url, "e", namespace), headers={"X-Firebase-ETag": "true"})
    assert r.headers["ETag"] == "null_etag"
    r = requests.put(url(base_url, "e", namespace), data="1", headers={"if-match": "null_etag"})
    assert r.status_code == 200
    etag1 = r.headers["ETag"]
    assert etag1 != "null_etag"
    r = requests.get(url(base_url, "e", namespace), headers={"X-Firebase-ETag": "true"})
    assert r.headers["ETag"] == etag1 and r.json() == 1
    # stale ETag: 412 with the current value and ETag, nothing written
    r = requests.put(url(base_url, "e", namespace), data="2", headers={"if-match": "stale"})
    assert r.status_code == 412 and r.json() == 1 and r.headers["ETag"] == etag1
    r = requests.delete(url(base_url, "e", namespace), headers={"if-match": "stale"})
    assert r.status_code == 412 and r.json() == 1
    r = requests.put(url(base_url, "e", namespace), data="2", headers={"if-match": etag1})
    assert r.status_code == 200 and r.json() == 2
    etag2 = r.headers["ETag"]
    # if-none-match: 304 when unchanged, else the value and its ETag
    r = requests.get(url(base_url, "e", namespace), headers={"if-none-match": etag2})
    assert r.status_code == 304
    r = requests.get(url(base_url, "e", namespace), headers={"if-none-match": etag1})
    assert r.status_code == 200 and r.json() == 2 and r.headers["ETag"] == etag2
    r = requests.delete(url(base_url, "e", namespace), headers={"if-match": etag2})
    assert r.status_code == 200
    assert requests.get(url(base_url, "e", namespace)).json() is None
    # if-match on GET is refused
    r = requests.get(url(base_url, "e", namespace), headers={"if-match": etag2})
    assert r.status_code == 400 and "not supported" in r.json()["error"]


def test_etag_changes_with_priority(base_url, namespace):
    put(base_url, "p", namespace, {"a": 1})
    e1 = requests.get(url(base_url, "p", namespace), headers={"X-Firebase-ETag": "true"}).headers["ETag"]
    requests.put(url(base_url, "p/.priority", namespace), data="3")
    e2 = requests.get(url(base_url, "p", namespace), headers={"X-Firebase-ETag": "true"}).headers["ETag"]
    assert e1 != e2


def test_invalid_keys_and_paths(base_url, namespace):
    for key in ["a.b", "a$b", "a#b", "a[b", "a]b", "a\u0001b", "a\u007fb"]:
        r = put(base_url, "k", namespace, {"ok": 1, key: 1})
        assert r.status_code == 400, key
        assert "error" in r.json()
    assert requests.get(url(base_url, "k", namespace)).json() is None
    r = requests.get(f"{base_url}/a%24b.json?ns={namespace}")
    assert r.status_code == 400 and r.json() == {"error": "Invalid path: Invalid token in path"}
    r = requests.get(f"{base_url}/a%5Bb.json?ns={namespace}")
    assert r.status_code == 400
    r = put(base_url, "k", namespace, {"x" * 769: 1})
    assert r.status_code == 400
    r = put(base_url, "k", namespace, {"x" * 768: 1})
    assert r.status_code == 200


def test_depth_limit(base_url, namespace):
    def nest(n):
        value = 1
        for _ in range(n):
            value = {"a": value}
        return value
    assert put(base_url, "", namespace, nest(32)).status_code == 200
    r = put(base_url, "", namespace, nest(33))
    assert r.status_code == 400 and "error" in r.json()
    r = put(base_url, "x", namespace, nest(32))
    assert r.status_code == 400
    assert requests.get(url(base_url, "x", namespace)).json() is None
    deep = "/".join(["a"] * 33)
    assert requests.get(f"{base_url}/{deep}.json?ns={namespace}").status_code == 400


def test_malformed_bodies(base_url, namespace):
    for body in ["{", "nope", "", "[1,]", '{"a":1}x']:
        r = requests.put(url(base_url, "m", namespace), data=body)
        assert r.status_code == 400, body
        assert r.json()["error"].startswith("Invalid data")
    r = requests.patch(url(base_url, "m", namespace), data="[1]")
    assert r.status_code == 400
    assert requests.get(url(base_url, "m", namespace)).json() is None


def test_write_size_limit(base_url, namespace):
    big = "x" * (10 * 1024 * 1024 + 1)
    r = put(base_url, "big", namespace, big)
    assert r.status_code == 400 and "exceeds the maximum size" in r.json()["error"]
    r = requests.put(url(base_url, "big", namespace), data=b"[" + b"1," * (17 * 1024 * 1024) + b"1]")
    assert r.status_code == 400 and "error" in r.json()
    assert requests.get(url(base_url, "big", namespace)).json() is None


def test_nothing_partially_written_on_error(base_url, namespace):
    put(base_url, "a", namespace, {"keep": 1})
    r = requests.patch(url(base_url, "", namespace), data=json.dumps({"a/new": 1, "b": {"bad.key": 1}}))
    assert r.status_code == 400
    assert requests.get(url(base_url, "", namespace)).json() == {"a": {"keep": 1}}


def test_unknown_namespace_chars_rejected(base_url):
    r = requests.get(f"{base_url}/x.json?ns=bad/ns")
    assert r.status_code == 400 and "error" in r.json()


def test_cors_and_jsonp(base_url, namespace):
    put(base_url, "c", namespace, {"a": 1})
    r = requests.get(url(base_url, "c", namespace))
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    r = requests.options(url(base_url, "c", namespace))
    assert r.status_code == 200 and "PATCH" in r.headers["Access-Control-Allow-Methods"]
    r = requests.get(url(base_url, "c", namespace) + "&callback=cb")
    assert r.text == 'cb({"a":1});'


def test_error_body_printed_like_production(base_url, namespace):
    r = requests.get(f"{base_url}/a%24b.json?ns={namespace}")
    assert r.status_code == 400
    assert r.headers["Content-Type"].startswith("application/json")
    assert r.text == '{\n  "error" : "Invalid path: Invalid token in path"\n}'
