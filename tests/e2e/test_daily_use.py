# The page checks are JavaScript run in the browser, a line each.
# ruff: noqa: E501
"""Issue 17 in a real browser and against the live server: the command-line
client, every page at 1366x900 (no element wider than the viewport, no
overlapping column labels, no raw markdown), the review form's focus after a
reload, the round form's papers following the stage, the rounds' confirmation."""

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from benchmark.accounts import api_token_create
from reviews.models import Assignment
from submissions.models import Stage
from tests.benchmark.factories import PASSWORD, AgentFactory, TaskFactory, TeamFactory, UserFactory
from tests.benchmark.runs import SAMPLE_TASK, sample_run
from tests.reviews.scenario import scenario_build
from tests.support.client_cli import CLIENT, client_environment, mlrbench_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("SCREENSHOT_DIR", "/tmp/mlrbench-screenshots"))


def mlrbench(live_server, token: str, *args: str) -> subprocess.CompletedProcess:
    """The client as a user runs it, with `token`."""
    return mlrbench_run(live_server.url, *args, token=token)


def test_the_client_needs_no_django():
    code = (
        "import sys, mlrbench_client.cli, mlrbench_client.http, mlrbench_client.packing;"
        "sys.exit(any(m.split('.')[0] in ('django', 'rest_framework') for m in sys.modules))"
    )
    env = client_environment()
    assert subprocess.run([sys.executable, "-c", code], env=env, timeout=60).returncode == 0


def test_the_client_submits_a_run_folder_and_reads_the_site_back(
    live_server, media_root, mlrbench_data, tmp_path
):
    owner = UserFactory()
    AgentFactory(name="cli-agent", team=TeamFactory(members=[owner]), o4_mini=True)
    TaskFactory(slug=SAMPLE_TASK)
    token = api_token_create(user=owner, name="cli").key
    run = shutil.copytree(sample_run(mlrbench_data), tmp_path / "run")
    common = ["--agent", "cli-agent", "--task", SAMPLE_TASK, "--stage", "end2end"]

    first = mlrbench(live_server, token, "submit", str(run), *common)
    assert first.returncode == 0, first.stderr
    submission_id = int(first.stdout.strip())
    assert "uploading [" in first.stderr and "100%" in first.stderr  # the progress bar
    assert "No judge is active" in first.stderr  # the site's notice, passed on

    # The same files packed another way are the same submission.
    packed = tmp_path / "run.tar.gz"
    with tarfile.open(packed, "w:gz") as archive:
        archive.add(run, arcname="my-run")
    again = mlrbench(live_server, token, "submit", str(packed), *common)
    assert again.returncode == 0, again.stderr
    assert int(again.stdout.strip()) == submission_id and "already submitted" in again.stderr

    # --wait does not wait for ever when nothing will judge.
    (run / "extra.txt").write_text("another version\n")
    waited = mlrbench(live_server, token, "submit", str(run), *common, "--wait")
    assert waited.returncode == 1 and "not waiting" in waited.stderr

    status = mlrbench(live_server, token, "status", str(submission_id))
    assert status.returncode == 0, status.stderr
    assert f"submission {submission_id}: cli-agent / {SAMPLE_TASK} / end2end v1" in status.stdout

    board = mlrbench(live_server, token, "leaderboard", "--stage", "end2end", "--format", "csv")
    assert board.returncode == 0, board.stderr
    header = board.stdout.splitlines()[0].split(",")
    assert header[0] == "rank" and "agent" in header

    out = tmp_path / "export.zip"
    export = mlrbench(live_server, token, "export", str(out))
    assert export.returncode == 0, export.stderr
    assert "submissions.csv" in zipfile.ZipFile(out).namelist()


def test_the_client_refuses_what_intake_would_refuse_before_sending(live_server, tmp_path):
    run = tmp_path / "run"
    (run / "results").mkdir(parents=True)
    (run / "results" / "paper.md").write_text("# A paper\n")
    (run / "secret").symlink_to("/etc/passwd")
    result = mlrbench(
        live_server, "x", "submit", str(run), "--agent", "a", "--task", "t", "--stage", "paper"
    )
    assert result.returncode == 1 and "secret is a link" in result.stderr

    bad = mlrbench(live_server, "not-a-token", "status", "1")
    assert bad.returncode == 1 and bad.stderr.startswith("mlrbench: ")


def test_the_client_installs_with_pip_alone(tmp_path):
    # From a copy: a build leaves build/ and egg-info beside the sources.
    source = shutil.copytree(CLIENT, tmp_path / "client")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    install = subprocess.run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "--quiet",
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    help_text = subprocess.run(
        [str(venv / "bin" / "mlrbench"), "--help"], capture_output=True, text=True, timeout=60
    )
    assert help_text.returncode == 0 and "submit" in help_text.stdout


# --- pages at 1366x900 ----------------------------------------------------------------

# Anything wider than the viewport, and column headers whose boxes overlap.
LAYOUT_PROBLEMS = """() => {
  const width = document.documentElement.clientWidth;
  const problems = [];
  const inScroller = (el) => { for (let p = el.parentElement; p; p = p.parentElement) {
    if (p.classList && p.classList.contains('table-scroll')) return true; } return false; };
  for (const el of document.querySelectorAll('main *')) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || inScroller(el)) continue;
    if (box.right > width + 1) problems.push('wider than the viewport: ' + el.tagName + '.' + el.className + ' ' + Math.round(box.right));
  }
  if (document.documentElement.scrollWidth > width + 1) problems.push('page scrolls sideways: ' + document.documentElement.scrollWidth);
  for (const scroller of document.querySelectorAll('.table-scroll')) {
    if (scroller.scrollWidth > scroller.clientWidth + 1) problems.push('table clipped: ' + scroller.scrollWidth + ' > ' + scroller.clientWidth);
  }
  for (const row of document.querySelectorAll('main thead tr')) {
    const cells = [...row.children].map(c => c.getBoundingClientRect());
    for (let i = 1; i < cells.length; i++) if (cells[i].left < cells[i - 1].right - 1) problems.push('overlapping headers');
  }
  for (const svg of document.querySelectorAll('main svg')) {
    const labels = [...svg.querySelectorAll('text')].map(t => t.getBoundingClientRect()).filter(b => b.width);
    for (let i = 0; i < labels.length; i++) for (let j = i + 1; j < labels.length; j++) {
      const a = labels[i], b = labels[j];
      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) problems.push('overlapping chart labels');
    }
  }
  return [...new Set(problems)];
}"""
RAW_MARKDOWN = r"(^|\n)\s*(#{1,6} |\*\*[^*\n]+\*\*|!\[[^\]]*\]\()"


def test_every_page_fits_1366x900_without_clipping_or_raw_markdown(
    browser, live_server, mlrbench_data
):
    scenario = scenario_build()
    submission = scenario.assignment_a.submission
    TaskFactory(
        slug=SAMPLE_TASK, description=(mlrbench_data / "tasks" / f"{SAMPLE_TASK}.md").read_text()
    )
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    pages = {
        "home": "/",
        "catalogue": "/tasks/",
        "task": f"/tasks/{SAMPLE_TASK}/",
        **{f"leaderboard-{stage}": f"/leaderboard/?stage={stage}" for stage in Stage.values},
        "leaderboard-objective": "/leaderboard/?stage=objective",
        "agent": f"/agents/{submission.agent.name}/",
        "submission": submission.get_absolute_url(),
        "judgments": f"/submissions/{submission.pk}/judgments/",
        "agreement": "/agreement/?stage=end2end",
        "judges": "/judges/?stage=end2end",
        "releases": "/releases/",
        "compare": "/leaderboard/compare/?stage=end2end",
    }
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    found = {}
    for name, url in pages.items():
        page.goto(url)
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=False)
        problems = page.evaluate(LAYOUT_PROBLEMS)
        text = page.locator("main").inner_text()
        import re

        if name != "task" and re.search(RAW_MARKDOWN, text):
            problems.append("raw markdown")
        if problems:
            found[name] = problems
    # The reviewer's page too.
    page.goto("/reviews/login/")
    page.get_by_label("Username").fill(scenario.assignment_a.reviewer.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/reviews/")
    page.goto(f"/reviews/papers/{scenario.assignment_a.code}/")
    page.screenshot(path=str(SCREENSHOTS / "review.png"))
    problems = page.evaluate(LAYOUT_PROBLEMS)
    if problems:
        found["review"] = problems
    context.close()
    assert found == {}


def test_after_a_reload_the_focus_is_on_the_first_unscored_dimension(page):
    scenario = scenario_build()
    assignment: Assignment = scenario.assignment_a
    page.goto("/reviews/login/")
    page.get_by_label("Username").fill(assignment.reviewer.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/reviews/")  # the queue, not the home page
    page.goto(f"/reviews/papers/{assignment.code}/")
    groups = page.locator("fieldset[data-shortcut-group]")
    # "Advance after scoring" is on by default: each digit scores the next dimension.
    page.keyboard.press("7")
    page.keyboard.press("6")
    # The draft is saved as one types (debounced): wait for the save, not a fixed time.
    expect(page.locator("#draft-status")).to_have_attribute("data-state", "saved")
    page.reload()
    current = page.locator("fieldset.score.current")
    assert current.count() == 1
    index = groups.evaluate_all("(gs) => gs.findIndex(g => g.classList.contains('current'))")
    assert index == 2
    assert page.evaluate(
        "() => document.activeElement.closest('fieldset.score') === document.querySelectorAll('fieldset[data-shortcut-group]')[2]"
    )


def test_the_round_form_follows_the_stage_and_release_asks_first(page):
    scenario = scenario_build()
    page.goto("/reviews/login/?next=/reviews/rounds/")
    page.get_by_label("Username").fill(scenario.organiser.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/reviews/rounds/")
    shown = """() => [...document.querySelectorAll('[data-testid=paper-choice]')]
        .filter(label => !label.hidden).map(label => label.textContent.trim())"""
    stage = page.locator("select[name=stage]")
    stage.select_option("end2end")
    (paper,) = page.evaluate(shown)
    assert paper.endswith("· v1")
    stage.select_option("idea")
    assert page.evaluate(shown) == []
    assert page.get_by_test_id("no-papers-for-stage").is_visible()

    page.goto(f"/reviews/rounds/{scenario.review_round.pk}/")
    page.get_by_test_id("release-round").click()
    assert "still open" in page.get_by_test_id("confirm-open").inner_text()
    page.get_by_test_id("confirm-cancel").click()
    assert "not released" in page.get_by_test_id("round-release").inner_text()
