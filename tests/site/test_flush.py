"""The suite's flush after a transactional test (tests/support/flush.py) names
only the tables with rows, and leaves every table as empty as Django's does."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection

from tests.benchmark.factories import AgentFactory

pytestmark = pytest.mark.django_db


def table_rows() -> dict[str, int]:
    counts = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.django_table_names(only_existing=True):
            cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")  # noqa: S608
            counts[table] = cursor.fetchone()[0]
    return counts


def test_the_flush_names_only_the_tables_with_rows_and_empties_them_all():
    AgentFactory()  # an agent and its team, owner and the owner's user
    tables = connection.introspection.django_table_names(only_existing=True)
    with_rows = sorted(table for table, rows in table_rows().items() if rows)
    assert "benchmark_agent" in with_rows and len(with_rows) < len(tables)

    (truncate,) = connection.ops.sql_flush(no_style(), tables)
    named = truncate.removeprefix("TRUNCATE ").removesuffix(" CASCADE;").split(", ")
    assert sorted(name.strip('"') for name in named) == with_rows
    # Resetting sequences names every table, as Django does.
    (resetting,) = connection.ops.sql_flush(no_style(), tables, reset_sequences=True)
    assert resetting.count(",") == len(tables) - 1

    with connection.cursor() as cursor:  # in the test's transaction: checked now, not at commit
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    call_command("flush", interactive=False, inhibit_post_migrate=True, stdout=StringIO())
    assert set(table_rows().values()) == {0}
