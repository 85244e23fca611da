"""`common.bulk_writes`: inside a bulk write, per-row invalidations run once, at its end."""

import pytest

from common.bulk_writes import deferred, deferred_done, writes_deferred


def test_outside_a_bulk_write_nothing_is_deferred():
    assert deferred("key", lambda: None) is False


def test_each_key_runs_once_at_the_end_even_when_the_block_fails():
    calls: list[str] = []
    with pytest.raises(RuntimeError), writes_deferred():
        for _ in range(3):
            assert deferred("boards", lambda: calls.append("boards"))
        with writes_deferred():  # nested: the outer block runs them
            deferred("agreement", lambda: calls.append("agreement"))
        assert calls == []
        raise RuntimeError
    assert calls == ["boards", "agreement"]


def test_a_key_done_is_dropped_until_the_next_write():
    calls: list[str] = []
    with writes_deferred():
        deferred("boards", lambda: calls.append("first"))
        deferred_done("boards")
    assert calls == []
    with writes_deferred():
        deferred("boards", lambda: calls.append("first"))
        deferred_done("boards")
        deferred("boards", lambda: calls.append("after"))
    assert calls == ["after"]
