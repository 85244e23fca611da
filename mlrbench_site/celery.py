"""The Celery app: two named queues, `judge` (LLM calls, I/O-bound) and `gpu`
(experiment jobs, one per GPU). Configuration comes from Django settings
(`CELERY_*`), so the same environment drives web, worker and tests."""

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

JUDGE_QUEUE = "judge"
GPU_QUEUE = "gpu"

app = Celery("mlrbench_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue(JUDGE_QUEUE), Queue(GPU_QUEUE))
app.conf.task_default_queue = JUDGE_QUEUE
app.autodiscover_tasks()
