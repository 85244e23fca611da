"""The Celery app. Configuration comes from Django settings (`CELERY_*`, the
queues and their routes too), so the same environment drives web, worker and
tests."""

import os

from celery import Celery
from django.conf import settings
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

app = Celery("mlrbench_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
# The queues and the routes to them are settings (JUDGE_QUEUE, GPU_QUEUE,
# CELERY_TASK_ROUTES); declared here so a worker consumes exactly these.
app.conf.task_queues = (Queue(settings.JUDGE_QUEUE), Queue(settings.GPU_QUEUE))
app.autodiscover_tasks()
