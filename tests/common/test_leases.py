"""One lease for every row a worker holds: claimed once, kept alive by its
holder, freed by a reaper once its holder has been silent too long. Shown on
judgment rows (a token that is None while nobody holds it)."""

import uuid
from datetime import timedelta

import pytest
from django.db.models import Q
from django.utils import timezone

from common.leases import (
    Lease,
    lease_claim,
    lease_heartbeat,
    lease_held,
    lease_reap,
    lease_release,
)
from judging.models import Judgment, JudgmentStatus
from tests.judging.factories import JudgmentFactory, RubricFactory

LEASE = Lease(running=JudgmentStatus.RUNNING, no_token=None, heartbeat_field="started_at")
FREE = Q(status=JudgmentStatus.QUEUED)

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued():
    rubric = RubricFactory()
    return lambda: JudgmentFactory(rubric=rubric)


def claim(judgment, token, **options) -> bool:
    rows = Judgment.objects.filter(pk=judgment.pk)
    return lease_claim(rows, lease=LEASE, free=FREE, token=token, **options)


def silent_for(judgment, seconds: float) -> None:
    Judgment.objects.filter(pk=judgment.pk).update(
        started_at=timezone.now() - timedelta(seconds=seconds)
    )


def test_a_free_row_is_claimed_once(queued):
    judgment = queued()
    first, second = uuid.uuid4(), uuid.uuid4()

    assert claim(judgment, first, error="")
    assert not claim(judgment, second)

    judgment.refresh_from_db()
    assert judgment.status == JudgmentStatus.RUNNING and judgment.run_token == first
    assert judgment.started_at is not None


def test_a_silent_holder_loses_its_row_to_a_claim_that_accepts_stale_ones(queued):
    judgment = queued()
    first, second = uuid.uuid4(), uuid.uuid4()
    claim(judgment, first)

    assert not claim(judgment, second, stale_seconds=60)  # still alive
    silent_for(judgment, 120)
    assert not claim(judgment, second)  # no stale_seconds: only free rows
    assert claim(judgment, second, stale_seconds=60)

    judgment.refresh_from_db()
    assert judgment.run_token == second
    rows = Judgment.objects.filter(pk=judgment.pk)
    assert not lease_held(rows, lease=LEASE, token=first).update(error="late")


def test_only_the_holder_beats_and_the_beat_keeps_it_from_the_reaper(queued):
    judgment = queued()
    holder = uuid.uuid4()
    claim(judgment, holder)
    silent_for(judgment, 120)
    rows = Judgment.objects.filter(pk=judgment.pk)

    assert not lease_heartbeat(rows, lease=LEASE, token=uuid.uuid4())
    assert lease_heartbeat(rows, lease=LEASE, token=holder)

    freed = lease_reap(
        Judgment.objects.all(), lease=LEASE, stale_seconds=60, status=JudgmentStatus.QUEUED
    )
    assert freed == []
    judgment.refresh_from_db()
    assert judgment.status == JudgmentStatus.RUNNING and judgment.run_token == holder


def test_the_reaper_frees_the_rows_whose_holder_went_silent(queued):
    silent, alive, waiting = queued(), queued(), queued()
    claim(silent, uuid.uuid4())
    claim(alive, uuid.uuid4())
    silent_for(silent, 120)

    freed = lease_reap(
        Judgment.objects.all(),
        lease=LEASE,
        stale_seconds=60,
        status=JudgmentStatus.QUEUED,
        error="requeued",
    )

    assert freed == [silent.pk]
    silent.refresh_from_db()
    assert silent.status == JudgmentStatus.QUEUED and silent.run_token is None
    assert silent.error == "requeued"
    assert Judgment.objects.get(pk=alive.pk).status == JudgmentStatus.RUNNING
    assert Judgment.objects.get(pk=waiting.pk).status == JudgmentStatus.QUEUED
    # Freed, it is claimable again.
    assert claim(silent, uuid.uuid4())


def test_a_holder_releases_its_row_and_nobody_else_can(queued):
    judgment = queued()
    holder = uuid.uuid4()
    claim(judgment, holder)
    rows = Judgment.objects.filter(pk=judgment.pk)

    assert not lease_release(rows, lease=LEASE, token=uuid.uuid4(), status=JudgmentStatus.QUEUED)
    assert lease_release(rows, lease=LEASE, token=holder, status=JudgmentStatus.DONE, error="")

    judgment.refresh_from_db()
    assert judgment.status == JudgmentStatus.DONE and judgment.run_token is None
    assert not lease_release(rows, lease=LEASE, token=holder, status=JudgmentStatus.QUEUED)


def test_a_lease_without_a_token_is_held_by_its_claim_alone(queued):
    lease = Lease(running=JudgmentStatus.RUNNING, token_field=None, heartbeat_field="started_at")
    judgment = queued()
    rows = Judgment.objects.filter(pk=judgment.pk)

    assert lease_claim(rows, lease=lease, free=FREE, stale_seconds=60)
    assert not lease_claim(rows, lease=lease, free=FREE, stale_seconds=60)
    silent_for(judgment, 120)
    assert lease_heartbeat(rows, lease=lease)
    assert not lease_claim(rows, lease=lease, free=FREE, stale_seconds=60)
    silent_for(judgment, 120)
    assert lease_claim(rows, lease=lease, free=FREE, stale_seconds=60)
    assert Judgment.objects.get(pk=judgment.pk).run_token is None  # never written
