"""One list of the site's packages: INSTALLED_APPS, pyproject.toml's
`packages.find` and the Dockerfile's copies before `pip install .` agree, and
a non-editable install (a built wheel) holds every one of them."""

import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from django.conf import settings

from tests.conftest import PROJECT_ROOT

# Packages that are not Django apps but ship with the site (never in INSTALLED_APPS).
NOT_APPS = {"mlrbench_site", "common", "sandbox"}


def _site_packages() -> set[str]:
    return set(settings.PROJECT_APPS) | NOT_APPS


def test_the_packages_that_are_not_apps_are_not_installed_as_apps():
    assert NOT_APPS.isdisjoint(settings.INSTALLED_APPS)


def test_pyproject_packages_are_the_site_packages():
    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    assert {pattern.removesuffix("*") for pattern in include} == _site_packages()


def test_the_dockerfile_copies_every_site_package_before_installing():
    dockerfile = (PROJECT_ROOT / "Dockerfile").read_text()
    before_install = dockerfile.split("RUN pip install", 1)[0]
    copied = set(re.findall(r"^COPY (\w+) \./\1$", before_install, flags=re.MULTILINE))
    assert copied == _site_packages()


def test_a_wheel_holds_every_site_package(tmp_path: Path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), "."],
        cwd=PROJECT_ROOT,
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert _site_packages() <= {name.split("/")[0] for name in names}
    for app in settings.PROJECT_APPS:
        assert any(name.startswith((f"{app}/models.py", f"{app}/models/")) for name in names), app
