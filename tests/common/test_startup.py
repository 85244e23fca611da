"""Every process (a command, a worker, the web server) loads the apps; what that
loads is paid on each start. litellm alone took ~10 s of a 20 s command start,
so the heavy libraries are imported where they are used, never at load time
(perf/startup.py measures the starts)."""

import json
import os
import subprocess
import sys

from tests.conftest import PROJECT_ROOT

# Imported only by the code that calls a model or computes statistics.
HEAVY = ("litellm", "openai", "scipy", "krippendorff")

LOAD_EVERYTHING = """
import importlib, json, sys
import django
django.setup()
from django.apps import apps
from django.contrib import admin
from django.urls import get_resolver
admin.autodiscover()
for config in apps.get_app_configs():
    for part in ("models", "admin", "urls", "api_urls", "tasks"):
        try:
            importlib.import_module(f"{config.name}.{part}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{config.name}.{part}":
                raise
get_resolver().url_patterns  # the root URL conf and every module it includes
from mlrbench_site.celery import app
app.loader.import_default_modules()  # what a worker imports before it is ready
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules} & set(%r))))
"""


def test_loading_the_apps_urls_and_tasks_imports_no_heavy_library():
    result = subprocess.run(
        [sys.executable, "-c", LOAD_EVERYTHING % (HEAVY,)],
        cwd=PROJECT_ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "mlrbench_site.settings"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    imported = json.loads(result.stdout.strip().splitlines()[-1])
    assert imported == [], f"loading the site imported {imported}; import them where used"
