"""The apps' arrows (README, "What is where"): each app imports only the apps
below it, every app may use `common`, `common` imports no app, and no app
imports `mlrbench_site` (it only wires the apps together)."""

import ast
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT

# Each app and the apps it may import (besides itself and common).
ALLOWED = {
    "benchmark": set(),
    "experiments": {"benchmark"},
    "judging": {"benchmark", "experiments"},
    "agent_runs": {"benchmark", "experiments"},
    "reviews": {"benchmark", "experiments", "judging"},
    "leaderboard": {"benchmark", "experiments", "judging", "reviews"},
    "common": set(),
}
PROJECT_PACKAGES = {*ALLOWED, "mlrbench_site"}


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names & PROJECT_PACKAGES


@pytest.mark.parametrize("app", sorted(ALLOWED))
def test_an_app_imports_only_the_apps_below_it(app):
    folder = PROJECT_ROOT / app
    if not folder.is_dir():
        pytest.skip(f"{app}/ does not exist")
    allowed = ALLOWED[app] | {app} | ({"common"} if app != "common" else set())
    wrong = {
        str(path.relative_to(PROJECT_ROOT)): sorted(_imported_packages(path) - allowed)
        for path in folder.rglob("*.py")
    }
    assert {path: names for path, names in wrong.items() if names} == {}
