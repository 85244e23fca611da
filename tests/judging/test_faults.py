"""The fault test (issue 20): 300 judgments in flight against a loopback model
answering 30% errors; a judge worker SIGKILLed, the broker (a Redis of the
test's own) restarted, the workers' PostgreSQL connections terminated. Then,
with no command by hand, every judgment ends `done` exactly once within a
few reaper intervals. Sizes fit CI's two cores (see tests/judging/fault_drill.py)."""

import pytest

from .fault_drill import DrillOptions, FaultDrill

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.backends]


def test_after_a_killed_worker_a_broker_restart_and_dropped_connections_every_judgment_is_done_once(
    settings,
):
    options = DrillOptions()
    drill = FaultDrill(options, media_root=str(settings.MEDIA_ROOT))
    try:
        result = drill.run(faults=True)
    finally:
        drill.close()

    assert len(result.faults) == 3, result.faults
    assert result.statuses == {"done": options.judgments}, (result.statuses, result.faults)
    assert result.scores_per_judgment == {5}  # every dimension once: none twice, none missing
    # Recovery came from the reaper: the killed worker's runs were requeued after the
    # hard limit, lost messages sent again; all within a few intervals of that.
    assert result.seconds < options.hard_limit + 10 * options.reap_interval + 120
