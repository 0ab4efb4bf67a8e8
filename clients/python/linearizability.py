"""A linearizability checker for histories of single registers (Wing & Gong's search with
Lowe's memoization, as Knossos and Porcupine do), for the replica suite's fault runs.

An operation is a dict: ``f`` ("read", "write" or "cas"), ``value`` (what a write writes; for a
cas the pair ``(expected, new)``), ``ok`` (True: it took effect as answered; None: unknown, it may
or may not have), ``result`` (what a read returned; for a cas whether it swapped), and the
``call`` and ``ret`` times (``ret`` is ignored for an unknown operation: it may take effect any
time after its call). Operations that certainly did nothing are left out of the history.

``check(history, initial)`` returns None when some order of the operations, each placed
between its call and its return, explains every answer; else a short description of the
first point the search could not get past.
"""
import math
import sys


def _step(op, state):
    """The register after `op` from `state`, or None when `op`'s answer rules it out there."""
    f = op["f"]
    if f == "read":
        return state if op["ok"] is None or op["result"] == state else None
    if f == "write":
        return op["value"]
    expected, new = op["value"]
    if op["ok"] is None:
        return new if state == expected else state
    if op["result"]:
        return new if state == expected else None
    return state if state != expected else None


def check(history, initial=None):
    ops = sorted(history, key=lambda o: o["call"])
    n = len(ops)
    if n == 0:
        return None
    ret = [math.inf if op["ok"] is None else op["ret"] for op in ops]
    required = sum(1 << i for i, op in enumerate(ops) if op["ok"] is not None)
    seen = set()
    best = [0, None]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * n + 100))

    def search(done, state):
        if done & required == required:
            return True
        if (done, state) in seen:
            return False
        seen.add((done, state))
        # The next one linearized was called before every remaining certain operation returned.
        horizon = min(ret[i] for i in range(n) if not done >> i & 1)
        depth = bin(done & required).count("1")
        if depth > best[0]:
            best[0], best[1] = depth, (state, horizon)
        for i in range(n):
            if done >> i & 1:
                continue
            if ops[i]["call"] > horizon:
                break
            after = _step(ops[i], state)
            if after is not None and search(done | 1 << i, after):
                return True
        return False

    if search(0, initial):
        return None
    state, horizon = best[1] if best[1] else (initial, None)
    stuck = [op for i, op in enumerate(ops) if op["ok"] is not None and op["call"] <= (horizon or math.inf)][:6]
    return f"no order explains the answers past {best[0]} of {bin(required).count('1')} operations; register {state!r}, pending {stuck}"
