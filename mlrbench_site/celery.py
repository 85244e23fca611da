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
