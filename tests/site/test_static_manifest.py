"""Production static files: collectstatic with the manifest storage, then
pages point at content-hashed names that WhiteNoise serves (the suite itself
runs with plain names for the browser tests' live server)."""

import os
import re
import subprocess
import sys

from tests.conftest import PROJECT_ROOT


def test_collectstatic_and_whitenoise_serve_hashed_assets(tmp_path):
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "DJANGO_SETTINGS_MODULE": "mlrbench_site.settings",
        "DEBUG": "0",
        "SECRET_KEY": "static-test-key",
        "ALLOWED_HOSTS": "testserver",
        "STATIC_ROOT": str(tmp_path / "static"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    collect = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert collect.returncode == 0, collect.stderr
    code = (
        "import django; django.setup();"
        "from django.core.management import call_command; call_command('migrate', verbosity=0);"
        "from django.test import Client; c = Client();"
        "html = c.get('/').content.decode(); print(html);"
        "import re;"
        "css = re.search(r'href=\"(/static/css/site\\.[0-9a-f]{12}\\.css)\"', html).group(1);"
        "r = c.get(css); print('STATUS', r.status_code, r.headers.get('Cache-Control'))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    status = re.search(r"STATUS (\d+) (.*)", result.stdout)
    assert status.group(1) == "200"
    assert "max-age=315360000" in status.group(2)  # hashed names are cached for good
