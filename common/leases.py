"""One lease: how a worker holds a row while it works on it (a judgment, an
experiment run, an agent run's stage).

A held row is `running`, carries the token of the run that holds it (or the
model's "nobody" value: None or ""), and the time of its holder's last sign of
life (a heartbeat; a judgment, which writes none, uses its start). Every step is
one conditional update, so two workers, a redelivered message or a reaper never
both win:

- `lease_claim`: a free row (or, given `stale_seconds`, one whose holder has
  been silent that long) becomes running, stamped with the new token and now;
- `lease_heartbeat`: the holder says it is alive;
- `lease_held`: the rows still held by a token (the holder's writes go through
  it, so a run given up for dead writes nothing);
- `lease_release`: the holder gives its row back;
- `lease_reap`: the rows whose holder has been silent too long go back, for
  another worker.

How long is too long is the caller's (settings LEASE_STALE_SECONDS and the
per-kind values beside it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import models, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

M = TypeVar("M", bound=models.Model)


@dataclass(frozen=True)
class Lease:
    """Where a model keeps its lease."""

    # The status of a held row.
    running: str
    status_field: str = "status"
    # None: the row names no holder (only one worker may take it at a time, and
    # the claim's condition is the whole lease).
    token_field: str | None = "run_token"  # noqa: S105 - a column's name
    # The token's value while nobody holds the row.
    no_token: Any = ""
    heartbeat_field: str = "heartbeat_at"

    def _held(self, token: Any) -> Q:
        condition = Q(**{self.status_field: self.running})
        if self.token_field is not None:
            condition &= Q(**{self.token_field: token})
        return condition

    def _stale(self, cutoff: datetime, *, inclusive: bool) -> Q:
        lookup = "lte" if inclusive else "lt"
        return Q(**{self.status_field: self.running, f"{self.heartbeat_field}__{lookup}": cutoff})


def lease_claim(
    rows: QuerySet[M],
    *,
    lease: Lease,
    free: Q,
    stale_seconds: float | None = None,
    token: Any = None,
    now: datetime | None = None,
    **values: Any,
) -> bool:
    """Take the row(s) of `rows` that are `free`, or (given `stale_seconds`) held by a
    holder silent for longer than that: running, with `token` and a heartbeat of
    now, and `values` set. False, changing nothing, when another holds it."""
    now = now or timezone.now()
    condition = free
    if stale_seconds is not None:
        condition |= lease._stale(now - timedelta(seconds=stale_seconds), inclusive=False)
    fields: dict[str, Any] = {lease.status_field: lease.running, lease.heartbeat_field: now}
    if lease.token_field is not None:
        fields[lease.token_field] = token
    return bool(rows.filter(condition).update(**fields, **values))


def lease_heartbeat(rows: QuerySet[M], *, lease: Lease, token: Any = None) -> bool:
    """The holder is alive: its heartbeat is now (a row without a token field is
    the caller's to narrow to its own)."""
    if lease.token_field is not None:
        rows = rows.filter(**{lease.token_field: token})
    return bool(rows.update(**{lease.heartbeat_field: timezone.now()}))


def lease_held(rows: QuerySet[M], *, lease: Lease, token: Any) -> QuerySet[M]:
    """The rows of `rows` still running under `token`."""
    return rows.filter(lease._held(token))


def lease_release(
    rows: QuerySet[M], *, lease: Lease, token: Any, status: str, **values: Any
) -> bool:
    """Give a held row back: `status`, nobody's, `values` set; False when it was no
    longer this holder's."""
    fields = _freed(lease, status)
    return bool(lease_held(rows, lease=lease, token=token).update(**fields, **values))


def lease_reap(
    rows: QuerySet[M], *, lease: Lease, stale_seconds: float, status: str, **values: Any
) -> list[Any]:
    """Free the rows of `rows` whose holder has been silent for `stale_seconds` or
    more (its worker died): each goes to `status`, nobody's, with `values`. Rows
    another reaper has locked are left to it. The primary keys freed, in the
    caller's transaction (its on-commit work runs once it commits)."""
    cutoff = timezone.now() - timedelta(seconds=stale_seconds)
    fields = _freed(lease, status)
    token_field = lease.token_field or "pk"
    freed = []
    with transaction.atomic():
        stale = list(
            rows.filter(lease._stale(cutoff, inclusive=True))
            .select_for_update(skip_locked=True)
            .values_list("pk", token_field)
        )
        for pk, token in stale:
            # Under the token it was read with: never a row another run holds now.
            held = lease_held(rows.model._default_manager.filter(pk=pk), lease=lease, token=token)
            if held.update(**fields, **values):
                freed.append(pk)
    return freed


def _freed(lease: Lease, status: str) -> dict[str, Any]:
    fields: dict[str, Any] = {lease.status_field: status}
    if lease.token_field is not None:
        fields[lease.token_field] = lease.no_token
    return fields
