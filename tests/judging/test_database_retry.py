"""A write that meets a dropped connection is tried again on a new one
(judging.services.run.database_retry, through tenacity); inside a transaction,
or after the last try, the error propagates."""

import pytest
from django.db import IntegrityError, OperationalError, connection, transaction

from judging.services import run


def _failing(times: int, error: Exception):
    calls = []

    def write() -> str:
        connection.ensure_connection()
        calls.append(connection.connection)
        if len(calls) <= times:
            raise error
        return "written"

    return write, calls


@pytest.mark.django_db(transaction=True)
def test_a_dropped_connection_is_retried_on_a_new_one():
    write, calls = _failing(1, OperationalError("server closed the connection unexpectedly"))
    connection.ensure_connection()

    assert run.database_retry(write, what="test") == "written"
    assert len(calls) == 2
    assert calls[1] is not calls[0]  # closed and opened again


@pytest.mark.django_db(transaction=True)
def test_the_last_failure_and_other_errors_propagate(monkeypatch):
    monkeypatch.setattr(run, "DATABASE_RETRIES", 2)
    write, calls = _failing(5, OperationalError("gone"))
    with pytest.raises(OperationalError):
        run.database_retry(write, what="test")
    assert len(calls) == 2

    write, calls = _failing(5, IntegrityError("duplicate"))
    with pytest.raises(IntegrityError):
        run.database_retry(write, what="test")
    assert len(calls) == 1


@pytest.mark.django_db(transaction=True)
def test_inside_a_transaction_nothing_is_retried():
    write, calls = _failing(1, OperationalError("gone"))
    with pytest.raises(OperationalError), transaction.atomic():
        run.database_retry(write, what="test")
    assert len(calls) == 1
