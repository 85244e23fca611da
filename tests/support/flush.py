"""A transactional test (a live server, a worker process) ends with Django's
flush: one TRUNCATE of every table, about 0.35 s on PostgreSQL even when the
test wrote to three of them. In the suite, the flush names only the tables that
hold a row (one query asks: a probe per table), the same end state in a few
milliseconds. A flush that resets sequences (`reset_sequences`) still names
every table: an emptied table's sequence is reset too."""

from collections.abc import Sequence

from django.db.backends.postgresql.operations import DatabaseOperations

_sql_flush_every_table = DatabaseOperations.sql_flush


def tables_with_rows(connection, tables: Sequence[str]) -> list[str]:
    """The `tables` that hold at least one row, in their order."""
    if not tables:
        return []
    quote = connection.ops.quote_name
    # Table names from Django's introspection, quoted: nothing of a user's.
    probes = " UNION ALL ".join(
        f"(SELECT {index} FROM {quote(table)} LIMIT 1)"  # noqa: S608
        for index, table in enumerate(tables)
    )
    with connection.cursor() as cursor:
        cursor.execute(probes)
        return [tables[index] for index in sorted(row[0] for row in cursor.fetchall())]


def _sql_flush_tables_with_rows(
    self, style, tables, *, reset_sequences: bool = False, allow_cascade: bool = False
) -> list[str]:
    if not reset_sequences:
        tables = tables_with_rows(self.connection, tables)
        # A table with rows may be referenced by one without: that one is empty anyway.
        allow_cascade = True
    return _sql_flush_every_table(
        self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
    )


def flush_tables_with_rows_only(enabled: bool = True) -> None:
    """Make PostgreSQL's flush name only the tables with rows (or, `enabled=False`,
    every table again, as Django does)."""
    DatabaseOperations.sql_flush = (  # type: ignore[method-assign]
        _sql_flush_tables_with_rows if enabled else _sql_flush_every_table
    )
