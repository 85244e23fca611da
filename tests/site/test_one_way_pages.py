"""One way per idea on the pages (issue 37, item 4): one chart renderer (geometry
in `common.charts`, drawn by auto-escaping templates, never markup built in
Python and marked safe), one trace-step template, one template root, no worker
rendering through a view module, one polling loop. Each test fails when a second
way comes back."""

import ast
import re
from pathlib import Path

from django.conf import settings

from tests.conftest import PROJECT_ROOT

SITE_PACKAGES = [*settings.PROJECT_APPS, "common", "mlrbench_site", "sandbox"]

# Where `mark_safe` may stay, and why: each marks HTML cleaned with nh3 when it
# was stored, or the output of a template rendered with autoescaping.
MARK_SAFE_ALLOWED = {
    "benchmark/descriptions.py",  # a task's description, cleaned when rendered
    "common/rendering.py",  # markdown rendered and cleaned under a budget
    "experiments/panels.py",  # a panel's template output
    "judging/panels.py",  # a panel's template output
    "submissions/derived.py",  # derived HTML, cleaned when stored
    "submissions/selectors.py",  # a trace message's HTML, cleaned at intake
}
# Where a loop may still sleep: the one polling helper, retry back-offs and limiters
# (their own policy), the heartbeat's beat, and the sandbox (it imports no site code).
SLEEP_ALLOWED = {
    "common/polling.py",
    "common/llm.py",
    "common/cache_generation.py",
    "judging/services/run.py",
    "judging/ratelimit.py",
    "judging/heartbeat.py",
    "sandbox/processes.py",
    "sandbox/cgroups.py",
}
# What the root template folder holds: the site-wide base and pages, and overrides.
ROOT_TEMPLATES = {
    "403.html",
    "404.html",
    "_tabs.html",
    "base.html",
    "home.html",
    "admin",
    "drf_spectacular",
    "registration",
}


def _site_python_files() -> list[Path]:
    return sorted(
        path
        for package in SITE_PACKAGES
        for path in (PROJECT_ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    )


def _relative(path: Path) -> str:
    return str(path.relative_to(PROJECT_ROOT))


def test_no_python_module_builds_svg_or_marks_markup_safe_outside_the_allowlist():
    marking, drawing = set(), set()
    for path in _site_python_files():
        text = path.read_text(encoding="utf-8")
        if "mark_safe(" in text:
            marking.add(_relative(path))
        if "<svg" in text or "<rect" in text or "<circle" in text:
            drawing.add(_relative(path))
    assert marking <= MARK_SAFE_ALLOWED
    assert drawing == set()


def test_every_chart_template_draws_geometry_from_common_charts():
    templates = sorted(PROJECT_ROOT.glob("*/templates/**/*.html"))
    with_svg = [_relative(t) for t in templates if "<svg" in t.read_text(encoding="utf-8")]
    assert with_svg  # the charts are drawn by templates
    # The chart modules are gone from the apps: one module holds the geometry.
    assert not [p for p in PROJECT_ROOT.glob("*/charts.py") if p.parent.name == "leaderboard"]
    assert (PROJECT_ROOT / "common" / "charts.py").is_file()


def test_one_trace_step_template_is_included_by_the_trace_and_the_agent_run_pages():
    step_template = "submissions/_trace_step.html"
    templates = sorted(PROJECT_ROOT.glob("*/templates/**/*.html")) + sorted(
        (PROJECT_ROOT / "templates").rglob("*.html")
    )
    including = {_relative(t) for t in templates if step_template in t.read_text(encoding="utf-8")}
    assert including == {
        "submissions/templates/submissions/_trace.html",  # a submission's trace, a blind copy
        "agent_runs/templates/agent_runs/agent_run_detail.html",  # the live run, first load
        "agent_runs/templates/agent_runs/_transcript_steps.html",  # the live run, its polls
    }
    # No other template draws a step's tool calls, and no script builds a step.
    drawing_calls = {
        _relative(t) for t in templates if 'data-testid="tool-call"' in t.read_text("utf-8")
    }
    assert drawing_calls == {f"submissions/templates/{step_template}"}
    for script in (PROJECT_ROOT / "static" / "js").glob("*.js"):
        assert "transcript-step" not in script.read_text(encoding="utf-8"), script.name


def test_app_templates_live_in_their_app_and_the_root_holds_only_site_wide_ones():
    root = PROJECT_ROOT / "templates"
    assert {entry.name for entry in root.iterdir()} <= ROOT_TEMPLATES
    assert settings.TEMPLATES[0]["DIRS"] == [root] and settings.TEMPLATES[0]["APP_DIRS"]
    for app in settings.PROJECT_APPS:
        folder = PROJECT_ROOT / app / "templates"
        if folder.is_dir():
            # An app's templates are named after it: `<app>/templates/<app>/...`.
            assert {entry.name for entry in folder.iterdir()} == {app}, app


def _imports_site_views(node: ast.AST) -> bool:
    if not isinstance(node, ast.ImportFrom):
        return False
    module, names = node.module or "", [alias.name for alias in node.names]
    targets_views = module.split(".")[-1] == "views" or "views" in names
    # Django's and DRF's own `views` modules are libraries, not the site's pages.
    return targets_views and (node.level > 0 or module.split(".")[0] in SITE_PACKAGES)


def test_no_worker_service_or_selector_imports_a_views_module():
    """A page's HTML that a worker needs comes from a renderer the view shares
    (`leaderboard.boards`), never from the view module itself."""
    importing = {
        _relative(path)
        for path in _site_python_files()
        if path.name not in ("urls.py", "views.py", "apis.py")
        and any(_imports_site_views(node) for node in ast.walk(ast.parse(path.read_text("utf-8"))))
    }
    assert importing == set()


def test_site_code_sleeps_only_in_the_polling_helper_and_the_allowlist():
    sleeping = {
        _relative(path)
        for path in _site_python_files()
        if re.search(r"\bsleep\(", path.read_text(encoding="utf-8"))
    }
    assert sleeping <= SLEEP_ALLOWED
