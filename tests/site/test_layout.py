"""The apps' arrows (docs/architecture.md, "The app arrows"): each app imports only the apps
below it, every app may use `common`, `common` imports no app, no app imports
`mlrbench_site` (it only wires the apps together), and `sandbox` imports
neither Django nor any package of the site (experiments and agent runs use it)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT

# Each app and the project packages it may import (besides itself and common).
ALLOWED = {
    "benchmark": set(),
    "submissions": {"benchmark"},
    "experiments": {"benchmark", "submissions", "sandbox"},
    "judging": {"benchmark", "submissions", "experiments"},
    "agent_runs": {"benchmark", "submissions", "experiments", "sandbox"},
    "reviews": {"benchmark", "submissions", "experiments", "judging"},
    "leaderboard": {"benchmark", "submissions", "experiments", "judging", "reviews"},
    "common": set(),
    "sandbox": set(),
}
# Packages that import no package of the site, not even common.
STANDALONE = {"common", "sandbox"}
PROJECT_PACKAGES = {*ALLOWED, "mlrbench_site"}


def _imported_top_levels(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _imported_packages(path: Path) -> set[str]:
    return _imported_top_levels(path) & PROJECT_PACKAGES


@pytest.mark.parametrize("app", sorted(ALLOWED))
def test_an_app_imports_only_the_apps_below_it(app):
    folder = PROJECT_ROOT / app
    if not folder.is_dir():
        pytest.skip(f"{app}/ does not exist")
    allowed = ALLOWED[app] | {app} | (set() if app in STANDALONE else {"common"})
    wrong = {
        str(path.relative_to(PROJECT_ROOT)): sorted(_imported_packages(path) - allowed)
        for path in folder.rglob("*.py")
    }
    assert {path: names for path, names in wrong.items() if names} == {}


def test_the_sandbox_package_imports_no_django():
    files = sorted((PROJECT_ROOT / "sandbox").rglob("*.py"))
    assert files
    wrong = {
        str(path.relative_to(PROJECT_ROOT)): sorted(
            name
            for name in _imported_top_levels(path)
            if name in ("django", "rest_framework", "celery") or name.startswith("django_")
        )
        for path in files
    }
    assert {path: names for path, names in wrong.items() if names} == {}


def test_importing_the_sandbox_loads_neither_django_nor_an_app():
    # A fresh interpreter without settings: what `import sandbox` pulls in, transitively.
    script = (
        "import sys, sandbox\n"
        f"site = {sorted(PROJECT_PACKAGES - {'sandbox'})!r}\n"
        "loaded = {name.split('.')[0] for name in sys.modules}\n"
        "print(sorted(loaded & {'django', 'celery', *site}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PROJECT_ROOT,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "[]"
