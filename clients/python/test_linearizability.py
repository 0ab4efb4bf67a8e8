"""The register checker the replica suite's fault run relies on: it accepts what some order
explains and rejects what none does."""
from linearizability import check


def op(f, call, ret, value=None, result=None, ok=True):
    return {"f": f, "call": call, "ret": ret, "value": value, "result": result, "ok": ok}


def test_concurrent_operations_may_take_effect_in_either_order():
    history = [op("write", 0, 10, value=1), op("write", 1, 9, value=2), op("read", 11, 12, result=1)]
    assert check(history, 0) is None
    history = [op("write", 0, 10, value=1), op("read", 1, 2, result=1), op("read", 3, 4, result=0)]
    assert check(history, 0) is not None, "a read after another saw 1 cannot see the old 0"


def test_a_read_may_not_see_a_write_that_returned_before_it_began_undone():
    history = [op("write", 0, 1, value=1), op("read", 2, 3, result=0)]
    assert "no order" in check(history, 0)


def test_an_unknown_write_may_have_taken_effect_late_or_never():
    late = [op("write", 0, 1, value=1, ok=None), op("read", 5, 6, result=0), op("read", 7, 8, result=1)]
    assert check(late, 0) is None
    never = [op("write", 0, 1, value=1, ok=None), op("read", 5, 6, result=0)]
    assert check(never, 0) is None
    undone = [op("write", 0, 1, value=1, ok=None), op("read", 2, 3, result=1), op("read", 4, 5, result=0)]
    assert check(undone, 0) is not None


def test_compare_and_set_swaps_only_from_the_expected_value():
    history = [op("cas", 0, 1, value=(0, 5), result=True), op("cas", 2, 3, value=(0, 6), result=False), op("read", 4, 5, result=5)]
    assert check(history, 0) is None
    lost = [op("cas", 0, 1, value=(0, 5), result=True), op("cas", 2, 3, value=(0, 6), result=True)]
    assert check(lost, 0) is not None, "two swaps from 0 in a row lose an update"
