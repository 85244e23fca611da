# The page checks are JavaScript run in the browser.
# ruff: noqa: E501
"""Issue 29 in Chromium at 1366x900, on a database holding the imported
MLR-Bench sample: every public page, the review pages and the organiser
pages, each with a full-page screenshot (SCREENSHOT_DIR), and none may log a
console error (the nonce CSP turns any inline style or script into one),
scroll the page body sideways, or clip a chart label.

One test, one import, one browser with a context per role: the visitor, a
reviewer and a staff organiser."""

import os
import re
from dataclasses import dataclass, field
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("SCREENSHOT_DIR", "/tmp/mlrbench-screenshots")) / "pages"
VIEWPORT = {"width": 1366, "height": 900}
PASSWORD = "pw-for-tests"

# What a reader would call broken: the body scrolls sideways, an SVG label
# reaches outside its chart (the SVG clips it), a box cuts its text, a table
# scrolls inside its box with no cue that it does.
PAGE_PROBLEMS = """() => {
  const problems = [];
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth + 1) problems.push('the page scrolls sideways: ' + root.scrollWidth + ' > ' + root.clientWidth);
  for (const svg of document.querySelectorAll('svg.chart')) {
    const frame = svg.getBoundingClientRect();
    if (frame.width === 0) continue;
    const vb = svg.viewBox.baseVal;
    for (const text of svg.querySelectorAll('text')) {
      const box = text.getBBox();
      if (!box.width) continue;
      // A rotated label's box is in its own coordinates: the screen check covers it.
      const outside = vb && vb.width && !text.closest('[transform]') ? (box.x < vb.x - 1 || box.y < vb.y - 1 || box.x + box.width > vb.x + vb.width + 1 || box.y + box.height > vb.y + vb.height + 1) : false;
      const shown = text.getBoundingClientRect();
      if (outside || shown.left < frame.left - 1 || shown.right > frame.right + 1 || shown.top < frame.top - 1 || shown.bottom > frame.bottom + 1) problems.push('clipped chart label: ' + text.textContent.trim().slice(0, 40));
    }
    // Axes a reader can read values off: ticks along x, and along y either ticks
    // or the rows' labels (a heatmap has its rows and columns instead).
    if (!svg.classList.contains('heatmap')) {
      const name = svg.dataset.testid || svg.getAttribute('aria-label') || svg.className.baseVal;
      if (svg.querySelectorAll('text[data-axis="x"]').length < 2) problems.push('a chart without x-axis ticks: ' + name);
      if (svg.querySelectorAll('text[data-axis="y"]').length < 2 && !svg.querySelector('text.label')) problems.push('a chart without y-axis ticks: ' + name);
    }
    const parent = svg.parentElement.getBoundingClientRect();
    if (frame.right > parent.right + 1) problems.push('chart wider than its box: ' + svg.dataset.testid);
  }
  for (const el of document.querySelectorAll('main *')) {
    const style = getComputedStyle(el);
    if (!['hidden', 'clip'].includes(style.overflowX) || el.matches('select, input, textarea')) continue;
    // clientWidth <= 1: visually hidden on purpose (KaTeX's MathML for screen readers).
    if (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 1) problems.push('cut off: ' + el.tagName.toLowerCase() + '.' + el.className);
  }
  for (const scroller of document.querySelectorAll('.table-scroll')) {
    if (scroller.scrollWidth > scroller.clientWidth + 1 && !scroller.classList.contains('scrolls')) problems.push('a table scrolls with no cue');
  }
  return [...new Set(problems)];
}"""


# axe-core from the npm registry (tests/e2e/axe/package.json, installed by .ci/run
# with `npm ci --prefix tests/e2e/axe`), run on every page the walk visits.
AXE = Path(__file__).resolve().parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
# The API docs page is Swagger UI's own widget (#swagger-ui): it nests its
# controls (a button inside the operation's summary) and colours its badges itself;
# the site checks the page around it (tests/site: the schema, not the widget, is ours).
AXE_VIOLATIONS = """async () => {
  const context = document.querySelector('#swagger-ui') ? {exclude: [['#swagger-ui']]} : document;
  const result = await axe.run(context, {resultTypes: ['violations']});
  return result.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => 'axe ' + v.impact + ' ' + v.id + ': ' + v.help + ' (' + v.nodes.length + '): '
      + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', '));
}"""


def axe_problems(page) -> list[str]:
    """Serious and critical accessibility violations on the page (WCAG A and AA,
    and axe's best practices). Evaluated through the debugging protocol, not a
    script tag, so the site's nonce CSP is left as it is."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    return page.evaluate(AXE_VIOLATIONS)


def _admin_own_inline_style(url: str, error: str) -> bool:
    """Django's own admin widgets (the user form's password fields) set inline
    styles, which the site's CSP blocks: the page still works, and the site
    does not template them (as with Swagger UI's widget below)."""
    return url.startswith("/admin/") and "Applying inline style violates" in error


@dataclass
class Walk:
    """Pages visited, what each logged, and what looked broken."""

    found: dict[str, list[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def visit(self, page, name: str, url: str, *, status: int = 200) -> None:
        self.errors.clear()
        response = page.goto(url)
        page.wait_for_load_state("networkidle")
        problems = []
        if response is None or response.status != status:
            problems.append(f"status {response.status if response else None}, not {status}")
        problems += page.evaluate(PAGE_PROBLEMS)
        problems += axe_problems(page)
        # Chromium logs a page answered 403 or 404 as a failed resource: asked for here.
        expected = f"status of {status}" if status != 200 else None
        problems += [
            f"console: {e}"
            for e in self.errors
            if not (expected and expected in e) and not _admin_own_inline_style(url, e)
        ]
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True, timeout=120_000)
        if problems:
            self.found[f"{name} {url}"] = problems

    def expect(self, what: str, holds: bool) -> None:
        """A behaviour the issue names, checked on the page just visited."""
        if not holds:
            self.found[what] = ["does not hold"]

    def context(self, browser, base_url: str):
        context = browser.new_context(base_url=base_url, viewport=VIEWPORT)
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.on(
            "console",
            lambda message: self.errors.append(message.text) if message.type == "error" else None,
        )
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        return context, page


@dataclass
class Cast:
    reviewer: str
    organiser: str
    code: str
    round_pk: int
    submissions: dict[str, int]
    pdf_submission: int
    agent: str
    task: str


def cast_build(data: Path) -> Cast:
    """The imported sample, the site's objective task, a staff organiser, a
    reviewer assigned one imported paper, and two releases."""
    from benchmark.accounts import user_create
    from experiments.shipped import objective_tasks_install
    from judging.services.rubrics import ensure_default_rubrics
    from leaderboard.releases import release_create
    from reviews.services import (
        assignment_add,
        review_round_create,
        reviewer_register,
    )
    from submissions.models import Stage, Submission
    from submissions.selectors import submissions_newest
    from tests.benchmark.factories import UserFactory

    # The migrations' rubrics (the ones reviewers fill in): an earlier live-server
    # test's flush took them, and the import adds MLR-Judge's inactive.
    ensure_default_rubrics()
    call_command("import_mlrbench", str(data), stdout=StringIO(), stderr=StringIO())
    objective_tasks_install()
    release_create(name="sample-1")
    release_create(name="sample-2")
    # As `accounts user-create organiser --organiser` makes one: no superuser.
    organiser = user_create(username="organiser", password=PASSWORD, roles=["organiser"])
    reviewer = UserFactory(username="reviewer", password=PASSWORD)
    reviewer_register(user=reviewer)
    by_stage = {
        stage: Submission.objects.filter(stage=stage).order_by("pk").values_list("pk", flat=True)[0]
        for stage in Submission.objects.values_list("stage", flat=True).distinct()
    }
    pdf = (
        Submission.objects.filter(artifacts__path__endswith=".pdf")
        .order_by("pk")
        .values_list("pk", flat=True)
        .first()
    )
    # Every run of the round's task is off the public pages while the round is
    # open (blind review), so it is another task than the pages the walk visits
    # (the sample's end-to-end runs are all of one task: an idea of another).
    walked = Submission.objects.filter(pk__in=[*by_stage.values(), pdf])
    paper = (
        submissions_newest(Submission.objects.filter(stage=Stage.IDEA))
        .exclude(task__in=walked.values("task"))
        .order_by("-pk")
        .first()
    )
    assert paper is not None
    review_round = review_round_create(
        name="Sample round",
        stage=paper.stage,
        due_at=timezone.now() + timedelta(days=14),
        submissions=[paper],
        reviewers_per_paper=1,
        created_by=organiser,
    )
    assignment = assignment_add(review_round=review_round, reviewer=reviewer, submission=paper)
    task = Submission.objects.get(pk=by_stage[Stage.END2END]).task.slug
    return Cast(
        reviewer=reviewer.username,
        organiser=organiser.username,
        code=assignment.code,
        round_pk=review_round.pk,
        submissions=by_stage,
        pdf_submission=pdf or by_stage[Stage.END2END],
        agent=paper.agent.name,
        task=task,
    )


def public_pages(cast: Cast) -> dict[str, str]:
    stages = ["idea", "proposal", "experiment", "paper", "end2end"]
    pages = {
        "home": "/",
        "catalogue": "/tasks/",
        "task": f"/tasks/{cast.task}/",
        "task-results": f"/tasks/{cast.task}/results/",
        **{f"leaderboard-{s}": f"/leaderboard/?stage={s}" for s in [*stages, "objective"]},
        "leaderboard-majority": "/leaderboard/?stage=end2end&fabrication_rule=majority",
        "compare": "/leaderboard/compare/?stage=end2end",
        **{
            f"fabrication-{s}": f"/fabrication/?stage={s}"
            for s in ["experiment", "paper", "end2end"]
        },
        "fabrication-majority": "/fabrication/?stage=end2end&rule=majority",
        **{f"agreement-{s}": f"/agreement/?stage={s}" for s in stages},
        **{f"judges-{s}": f"/judges/?stage={s}" for s in ["idea", "end2end"]},
        "releases": "/releases/",
        "release": "/releases/sample-1/",
        "release-diff": "/releases/sample-1/diff/sample-2/",
        "agent": f"/agents/{cast.agent}/",
        "agent-submissions": f"/agents/{cast.agent}/submissions/",
        "submissions": "/submissions/",
        "api-docs": "/api/docs/",
        "sign-in": "/accounts/login/",
    }
    for stage, pk in cast.submissions.items():
        pages[f"submission-{stage}"] = f"/submissions/{pk}/"
    pages["submission-pdf"] = f"/submissions/{cast.pdf_submission}/"
    if "method" in cast.submissions:
        pages["experiment-runs"] = f"/experiments/?submission={cast.submissions['method']}"
    end2end = cast.submissions["end2end"]
    pages["submission-scores"] = f"/submissions/{end2end}/scores/"
    pages["submission-judgments"] = f"/submissions/{end2end}/judgments/"
    return pages


def _home(walk: Walk, page) -> None:
    walk.expect(
        "home: the 201 MLR-Bench tasks", page.get_by_test_id("task-count").inner_text() == "201"
    )
    walk.expect(
        "home: objective tasks apart", page.get_by_test_id("objective-task-count").count() == 1
    )


def _tabs(walk: Walk, page) -> None:
    current = page.locator('[role="tablist"] [role="tab"][aria-selected="true"]')
    walk.expect("tabs: one current tab, marked", current.count() == 1)


def _idea_board(walk: Walk, page) -> None:
    _tabs(walk, page)
    walk.expect(
        "idea board: no Pareto chart without costs", page.get_by_test_id("cost-chart").count() == 0
    )
    walk.expect("idea board: one line why", page.get_by_test_id("no-cost-chart").count() == 1)


def _footnote(rule_words: str):
    def check(walk: Walk, page) -> None:
        note = page.get_by_test_id("fabrication-footnote")
        walk.expect(
            f"footnote: the rule applied ({rule_words})",
            note.count() == 1 and rule_words in note.inner_text(),
        )

    return check


def _idea_page(walk: Walk, page) -> None:
    height = page.evaluate("document.documentElement.scrollHeight")
    walk.expect(
        f"imported idea: <= 3 screens before a fold ({height} px)", height <= 3 * VIEWPORT["height"]
    )
    text = page.locator("main").inner_text()
    for absent in ("No execution log", "No run yet", "Coding agent", "No judge is active"):
        walk.expect(f"idea page: no {absent!r}", absent not in text)


def _pdf_page(walk: Walk, page) -> None:
    text = page.get_by_test_id("pdf-text").inner_text()
    walk.expect("PDF text: no margin line numbers", not re.match(r"\s*000\s", text))


def _api_docs(walk: Walk, page) -> None:
    walk.expect(
        "API docs: a way back",
        page.locator('[data-testid="api-docs-header"] a[href="/"]').count() > 0,
    )


PUBLIC_CHECKS = {
    "home": _home,
    "leaderboard-idea": _idea_board,
    "leaderboard-end2end": _footnote("any judge flagged"),
    "leaderboard-majority": _footnote("a majority of the judges flagged"),
    "fabrication-end2end": _tabs,
    "judges-end2end": _tabs,
    "submission-idea": _idea_page,
    "submission-pdf": _pdf_page,
    "api-docs": _api_docs,
}


def review_keys_check(walk: Walk, page) -> None:
    """A score key scores the highlighted dimension and moves on ("advance after
    scoring", on by default); switched off, it stays; the focus follows."""
    if page.get_by_test_id("advance-after-scoring").count() == 0:
        walk.expect("review form: an 'advance after scoring' switch", False)
        return
    current = "() => [...document.querySelectorAll('fieldset[data-shortcut-group]')].findIndex(g => g.classList.contains('current'))"
    focused = "() => [...document.querySelectorAll('fieldset[data-shortcut-group]')].findIndex(g => g.contains(document.activeElement))"
    walk.expect(
        "review keys: advance after scoring is on by default",
        page.get_by_test_id("advance-after-scoring").is_checked(),
    )
    page.locator("main h1").first.click()
    start = page.evaluate(current)
    page.keyboard.press("7")
    walk.expect("review keys: advance after scoring", page.evaluate(current) == start + 1)
    walk.expect("review keys: the focus follows the highlight", page.evaluate(focused) == start + 1)
    walk.expect(
        "review keys: the hint says so",
        "move to the next one" in page.get_by_test_id("key-hint").inner_text(),
    )
    page.keyboard.press("[")
    walk.expect("review keys: [ moves back", page.evaluate(current) == start)
    walk.expect("review keys: the focus goes back too", page.evaluate(focused) == start)
    page.get_by_test_id("advance-after-scoring").uncheck()
    page.locator("main h1").first.click()
    page.keyboard.press("6")
    walk.expect("review keys: switched off, a score stays", page.evaluate(current) == start)
    page.keyboard.press("]")
    walk.expect("review keys: ] moves on", page.evaluate(current) == start + 1)
    page.get_by_test_id("advance-after-scoring").check()


def sign_in(page, username: str, url: str = "/accounts/login/") -> None:
    page.goto(url)
    page.locator("#id_username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state("networkidle")


def pages_walk(browser, base_url: str, cast: Cast) -> Walk:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    walk = Walk()

    context, page = walk.context(browser, base_url)
    for name, url in public_pages(cast).items():
        walk.visit(page, name, url)
        if name in PUBLIC_CHECKS:
            PUBLIC_CHECKS[name](walk, page)
    walk.visit(page, "not-found", "/no-such-page/", status=404)
    if page.locator('main a[href="/"]').count() == 0:
        walk.found["not-found way back"] = ["the site's own page, with a link home"]
    context.close()

    context, page = walk.context(browser, base_url)
    sign_in(page, cast.reviewer)
    if not page.url.endswith("/reviews/"):
        walk.found["reviewer sign-in"] = [f"landed on {page.url}, not the queue"]
    walk.visit(page, "review-queue", "/reviews/")
    if page.locator("header a", has_text="Upload").count():
        walk.found["review-queue upload"] = ["a reviewer sees an Upload link"]
    walk.visit(page, "review-paper", f"/reviews/papers/{cast.code}/")
    review_keys_check(walk, page)
    walk.visit(page, "review-forbidden", "/reviews/rounds/", status=403)
    walk.expect(
        "403: the site's page with a way back", page.locator('main a[href="/"]').count() > 0
    )
    context.close()

    context, page = walk.context(browser, base_url)
    sign_in(page, cast.organiser, "/reviews/login/")
    organiser_pages = {
        "rounds": "/reviews/rounds/",
        "round": f"/reviews/rounds/{cast.round_pk}/",
        "upload": "/submissions/new/",
        "account": "/account/",
        "agent-runs": "/agent-runs/",
        "agent-run-new": "/agent-runs/new/",
        "staff-submission-idea": f"/submissions/{cast.submissions['idea']}/",
        "staff-submission-end2end": f"/submissions/{cast.submissions['end2end']}/",
        # The admin for the site's models, through the organisers group (issue 39).
        "admin": "/admin/",
        "admin-judges": "/admin/judging/judge/",
        "admin-rounds": "/admin/reviews/reviewround/",
        "admin-user-add": "/admin/auth/user/add/",
    }
    for name, url in organiser_pages.items():
        walk.visit(page, f"organiser-{name}", url)
        if name == "admin":
            walk.expect(
                "the organiser's admin lists the site's models",
                page.locator("#content-main", has_text="MLR-Judge").count() > 0,
            )
    context.close()
    return walk


def test_every_page_reads_well_at_1366(browser, live_server, mlrbench_data, media_root):
    assert AXE.is_file(), "axe-core is not installed: npm ci --prefix tests/e2e/axe"
    cast = cast_build(mlrbench_data)
    walk = pages_walk(browser, live_server.url, cast)
    found = "\n".join(
        f"{where}: {problem}" for where, items in walk.found.items() for problem in items
    )
    assert walk.found == {}, found
