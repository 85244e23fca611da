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


# --- the write layer (issue 37, "a named write layer") ---------------------------
#
# The rule (README, "Inside an app"): an app's writes live in its `services`
# (a `services.py`, a `services/` package, or a module named `*_services.py`).
# Besides those, only these write to the database: migrations; a model's own
# `save()`; Django's admin (its saves and deletes announced by
# `common.results_admin.ResultsAdminMixin`, its actions calling services); and
# the modules below, each a writer by nature, with why. Management commands,
# views, APIs, tasks, receivers, selectors and forms call a service instead.
# A module that starts to write fails the test until it moves its writes into
# `services` or is listed here with its reason.
WRITERS_OUTSIDE_SERVICES = {
    "benchmark/accounts.py": "sign-up, teams, agents and API tokens",
    "benchmark/roles.py": "organiser and reviewer roles (auth groups and staff flags)",
    "benchmark/descriptions.py": "a task's rendered description, derived at import",
    "submissions/intake.py": "intake: a submission, its inputs and artifacts",
    "submissions/derived.py": "derived artifacts, rendered once at intake",
    "submissions/ledger.py": "the run's cost ledger, a derived artifact",
    "submissions/pdf_text.py": "a paper's text, a derived artifact",
    "submissions/costs.py": "the stored steps priced again (derived columns)",
    "submissions/runs_import.py": "the import of MLR-Bench runs",
    "experiments/queue.py": "queueing experiment runs",
    "experiments/runner.py": "the GPU worker's state of the run it claimed",
    "experiments/environments.py": "task environments' build claims",
    "experiments/results.py": "objective results and reproduction checks",
    "experiments/objective_tasks.py": "defining and importing objective tasks",
    "experiments/forgery.py": "an objective task's scoring check",
    "experiments/shipped.py": "the shipped objective tasks and their examples",
    "judging/heartbeat.py": "the judge worker's heartbeat of its running judgments",
    "judging/mlrbench_import.py": "the import of MLR-Bench's judgments",
    "agent_runs/context.py": "an agent run's stage progress, written by its worker",
    "reviews/hallucination_import.py": "the import of experts' hallucination checks",
    "leaderboard/releases.py": "frozen releases and their files",
    "common/leases.py": "the lease primitives (claim, heartbeat, reap) services call",
    "common/migration_ops.py": "an operation data migrations run",
}
# Calls that write rows. `update` counts on a queryset chain only (not a dict's).
ROW_WRITES = {"save", "delete", "create", "get_or_create", "update_or_create"}
BULK_WRITES = {"bulk_create", "bulk_update", "update"}
QUERYSET_STEPS = {"objects", "filter", "exclude", "all", "select_for_update", "order_by"}
# Receivers of `save`/`delete` that are no table: Redis, object storage, a file field.
NOT_TABLES = ("redis", "client", "storage", ".file")


def _names(node: ast.expr) -> list[str]:
    names: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Name):
            names.append(node.id)
            return names
        else:
            return names


def _database_writes(path: Path) -> list[str]:
    return _database_writes_in(path.read_text(encoding="utf-8"))


def _database_writes_in(source: str) -> list[str]:
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method, receiver = node.func.attr, node.func.value
        text = ast.unparse(receiver)
        if text in ("self", "super()") or any(word in text for word in NOT_TABLES):
            continue  # an object's own save (a model's override), or no table
        names = set(_names(receiver))
        on_queryset = bool(names & QUERYSET_STEPS) or any(n.endswith("_set") for n in names)
        if (method in {"save", "delete"}) or (method in (ROW_WRITES | BULK_WRITES) and on_queryset):
            found.append(f"{node.lineno}: {text}.{method}()")
    return found


def _in_write_layer(relative: str) -> bool:
    parts = Path(relative).parts
    return (
        "migrations" in parts
        or "services" in parts
        or Path(relative).stem in ("services", "models", "admin")
        or Path(relative).stem.endswith("_services")
        or relative in WRITERS_OUTSIDE_SERVICES
    )


def test_only_the_write_layer_writes_to_the_database():
    writes = {
        relative: found
        for app in sorted(ALLOWED)
        for path in sorted((PROJECT_ROOT / app).rglob("*.py"))
        if not _in_write_layer(relative := str(path.relative_to(PROJECT_ROOT)))
        and (found := _database_writes(path))
    }
    assert writes == {}


def test_each_listed_writer_still_writes():
    """A module whose writes moved into `services` leaves the list."""
    idle = [
        relative
        for relative in WRITERS_OUTSIDE_SERVICES
        if not _database_writes(PROJECT_ROOT / relative)
    ]
    assert idle == []


def test_the_write_layer_test_sees_a_write():
    # The scan itself: a queryset update and a row's save are writes; a dict's
    # update and a storage save are not.
    source = (
        "Judgment.objects.filter(pk=1).update(status='done')\n"
        "judgment.save()\n"
        "values.update(other)\n"
        "default_storage.save(name, content)\n"
    )
    assert _database_writes_in(source) == [
        "1: Judgment.objects.filter(pk=1).update()",
        "2: judgment.save()",
    ]
