"""The Celery app. Configuration comes from Django settings (`CELERY_*`, the
queues and their routes too), so the same environment drives web, worker and
tests."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

app = Celery("mlrbench_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# On every connection to the broker (start, and the broker's return), a worker
# sends again what the broker may have lost.
from django.core.checks import register  # noqa: E402 - the app first

from common.tasks import task_time_limits_check  # noqa: E402
from judging.worker_steps import BrokerConnected  # noqa: E402

app.steps["consumer"].add(BrokerConnected)
# `manage.py check` (and every worker's start) refuses tasks Celery would refuse to send.
register(task_time_limits_check)
