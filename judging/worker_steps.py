"""A step of every worker's consumer (mlrbench_site/celery.py adds it): each time
the worker connects to the broker, at start and after the broker came back, it
sends again the queued judgments whose messages the broker may have lost
(judging.services.queue.judgments_resend_lost). Without it, work queued before a
broker restart waited for the reaper's resend interval.

Imported by the Celery app before Django is set up: Django-free at import."""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery import bootsteps

logger = logging.getLogger(__name__)


class BrokerConnected(bootsteps.StartStopStep):
    requires = {"celery.worker.consumer.tasks:Tasks"}

    def start(self, parent: Any) -> None:
        # Beside the consumer, not in it: the worker takes messages meanwhile.
        threading.Thread(target=_resend, name="judgments-resend", daemon=True).start()


def _resend() -> None:
    from django.db import close_old_connections

    from .services.queue import judgments_resend_lost

    try:
        judgments_resend_lost()
    except Exception:
        # The reaper (beat) tries again at its next tick.
        logger.exception("queued judgments not sent again after connecting to the broker")
    finally:
        close_old_connections()
