"""The worker fixture starts a real Celery process on the suite's Redis that
consumes exactly the queues it was given (the judge and GPU issues run their
tasks through it)."""

import pytest

from mlrbench_site.celery import app

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("queue", ["judge", "gpu"])
def test_a_worker_process_consumes_only_its_queue(celery_worker_process, queue):
    process = celery_worker_process(queue)

    active = app.control.inspect(destination=[process.node], timeout=2).active_queues()
    assert {q["name"] for q in active[process.node]} == {queue}
