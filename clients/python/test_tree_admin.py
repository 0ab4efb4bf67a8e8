"""The Firebase Admin SDK's database module, pointed at Firegate as at the emulator, works
unchanged: reads and writes, queries, ETag transactions under contention, and listen()."""
import os
import queue
import threading
import uuid

import firebase_admin
import pytest
from firebase_admin import db

from conftest import start_server, stop_server


@pytest.fixture(scope="module")
def admin_url():
    """A server with 1 s keep-alives: the SDK's listener thread only notices close() when the
    next event arrives, so short keep-alives keep the listen test fast."""
    if os.environ.get("FIREGATE_URL"):
        yield os.environ["FIREGATE_URL"].rstrip("/")
        return
    os.environ["FIREGATE_TREE_KEEPALIVE_SECONDS"] = "1"
    try:
        proc, base = start_server()
    finally:
        del os.environ["FIREGATE_TREE_KEEPALIVE_SECONDS"]
    yield base
    stop_server(proc)


@pytest.fixture
def root(admin_url, namespace):
    host = admin_url.removeprefix("http://")
    previous = os.environ.get("FIREBASE_DATABASE_EMULATOR_HOST")
    os.environ["FIREBASE_DATABASE_EMULATOR_HOST"] = host
    app = firebase_admin.initialize_app(
        options={"databaseURL": f"http://{host}?ns={namespace}", "projectId": "demo-project"},
        name="tree-" + uuid.uuid4().hex,
    )
    yield db.reference("/", app=app)
    firebase_admin.delete_app(app)
    if previous is None:
        os.environ.pop("FIREBASE_DATABASE_EMULATOR_HOST", None)
    else:
        os.environ["FIREBASE_DATABASE_EMULATOR_HOST"] = previous


def test_set_get_update_push_delete(root):
    users = root.child("users")
    users.child("alan").set({"name": "Alan Turing", "born": 1912})
    assert users.child("alan").get() == {"name": "Alan Turing", "born": 1912}
    users.child("alan").update({"born": 1913, "field": "cs"})
    assert users.child("alan/born").get() == 1913
    users.update({"alan/nick": "A", "grace/nick": "G"})
    assert users.get(shallow=True) == {"alan": True, "grace": True}
    pushed = users.push({"name": "new"})
    assert len(pushed.key) == 20
    assert pushed.get() == {"name": "new"}
    value, etag = users.child("alan/nick").get(etag=True)
    assert value == "A" and etag
    pushed.delete()
    assert pushed.get() is None
    assert set(users.get().keys()) == {"alan", "grace"}


def test_get_if_changed_and_set_if_unchanged(root):
    ref = root.child("cas")
    ref.set({"v": 1})
    _, etag = ref.get(etag=True)
    changed, value, new_etag = ref.get_if_changed(etag)
    assert changed is False
    ok, value, etag2 = ref.set_if_unchanged(etag, {"v": 2})
    assert ok and value == {"v": 2}
    ok, value, etag3 = ref.set_if_unchanged(etag, {"v": 3})
    assert not ok and value == {"v": 2} and etag3 == etag2
    changed, value, _ = ref.get_if_changed(etag)
    assert changed is True and value == {"v": 2}


def test_ordered_and_limited_queries(root):
    scores = root.child("scores")
    scores.set({"ann": {"s": 30}, "bob": {"s": 10}, "cat": {"s": 20}, "dan": {"s": 40}})
    top = scores.order_by_child("s").limit_to_last(2).get()
    assert list(top.keys()) == ["ann", "dan"]
    mid = scores.order_by_child("s").start_at(15).end_at(35).get()
    assert list(mid.keys()) == ["cat", "ann"]
    assert list(scores.order_by_child("s").equal_to(10).get().keys()) == ["bob"]
    assert list(scores.order_by_key().start_at("c").get().keys()) == ["cat", "dan"]
    assert list(scores.order_by_key().limit_to_first(1).get().keys()) == ["ann"]
    root.child("vals").set({"a": 3, "b": 1, "c": 2})
    assert list(root.child("vals").order_by_value().limit_to_first(2).get().keys()) == ["b", "c"]


def test_transactions_under_contention_lose_no_increment(root):
    counter = root.child("counter")
    counter.set(0)
    threads, per_thread = 5, 10
    committed, aborted, lock = [0], [0], threading.Lock()

    def work():
        done = 0
        while done < per_thread:
            try:
                counter.transaction(lambda current: (current or 0) + 1)
            except db.TransactionAbortedError:
                # 25 lost races in a row: the SDK gives up; nothing was written, so try again.
                with lock:
                    aborted[0] += 1
                continue
            done += 1
            with lock:
                committed[0] += 1

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=120)
    assert committed[0] == threads * per_thread
    assert counter.get() == committed[0]


def test_transaction_on_missing_location(root):
    result = root.child("fresh").transaction(lambda current: {"created": current is None})
    assert result == {"created": True}
    assert root.child("fresh").get() == {"created": True}


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the SDK's own close race
def test_listen_receives_every_change(root):
    events = queue.Queue()
    ref = root.child("live")
    registration = ref.listen(lambda event: events.put((event.event_type, event.path, event.data)))
    try:
        assert events.get(timeout=5) == ("put", "/", None)
        ref.set({"a": 1})
        assert events.get(timeout=5) == ("put", "/", {"a": 1})
        ref.child("b").set(2)
        assert events.get(timeout=5) == ("put", "/b", 2)
        ref.update({"a": 3, "c/d": 4})
        assert events.get(timeout=5) == ("patch", "/", {"a": 3, "c/d": 4})
        ref.child("a").delete()
        assert events.get(timeout=5) == ("put", "/a", None)
        root.update({"live/e": 5})
        assert events.get(timeout=5) == ("patch", "/", {"e": 5})
        root.set({"live": "replaced"})
        assert events.get(timeout=5) == ("put", "/", "replaced")
    finally:
        registration.close()
