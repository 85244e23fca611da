"""The worker fixture starts a real Celery process on the suite's Redis that
consumes exactly the queues it was given (the judge and GPU issues run their
tasks through it); on RabbitMQ those queues are quorum queues."""

import pytest

from mlrbench_site.celery import app

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.backends]


@pytest.mark.parametrize("queue", ["judge", "gpu"])
def test_a_worker_process_consumes_only_its_queue(celery_worker_process, queue):
    process = celery_worker_process(queue)

    active = app.control.inspect(destination=[process.node], timeout=2).active_queues()
    assert {q["name"] for q in active[process.node]} == {queue}


def test_on_rabbitmq_the_worker_declares_durable_quorum_queues(celery_worker_process, settings):
    """RabbitMQ refuses to declare a queue again with another type, and says
    which type it has: the broker's own word that `judge` and `gpu` are quorum
    queues (replicated, kept through a broker restart)."""
    if not settings.BROKER_IS_RABBITMQ:
        pytest.skip("the suite's broker is Redis; CI's second run uses RabbitMQ")
    from amqp.exceptions import PreconditionFailed
    from kombu import Queue

    celery_worker_process("judge,gpu")
    for name in ("judge", "gpu"):
        with app.connection_for_write() as conn:
            declared = app.amqp.queues[name]
            assert declared.durable
            classic = Queue(
                name,
                declared.exchange,
                routing_key=name,
                queue_arguments={"x-queue-type": "classic"},
            )
            with pytest.raises(PreconditionFailed) as refused:
                classic(conn.default_channel).declare()
        assert "received 'classic' but current is 'quorum'" in str(refused.value)
