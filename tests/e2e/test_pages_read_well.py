# The page checks are JavaScript run in the browser.
# ruff: noqa: E501
"""Issue 29 and issue 39 in Chromium at 1366x900, on a database holding the
imported MLR-Bench sample: the days of the people who use the site, each in a
browser context of its own (the organiser's, the reviewer's, a visitor's and a
newcomer's with a local judge), every page visited once, each with a full-page
screenshot (SCREENSHOT_DIR). None may log a console error (the nonce CSP turns
any inline style or script into one), scroll the page body sideways, clip a
chart label, or fail the keyboard and screen-reader checks (accessibility.py)."""

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from common.polling import poll_until
from tests.benchmark.runs import SAMPLE_TASK, sample_run, zip_folder
from tests.e2e.accessibility import (
    AXE,
    CHART_PROBLEMS,
    axe_problems,
    forms_keyboard_problems,
)
from tests.e2e.upload_progress import WATCH_PROGRESS, progress_seen

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("SCREENSHOT_DIR", "/tmp/mlrbench-screenshots")) / "pages"
VIEWPORT = {"width": 1366, "height": 900}
# A page has settled when no request has been in flight for this long: just over
# the shortest pause of the site's pollers (a log tail with more to read asks again
# after 300 ms, static/js/experiment_runs.js). Playwright's networkidle waits 500 ms.
SETTLED_AFTER = 0.35
SETTLE_TIMEOUT = 30
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
    forms_seen: set[str] = field(default_factory=set)
    submissions: dict[str, int] = field(default_factory=dict)
    pending: set[str] = field(default_factory=set)

    def visit(self, page, name: str, url: str, *, status: int = 200) -> None:
        self.errors.clear()
        response = page.goto(url)
        problems = self.settle(page)
        if response is None or response.status != status:
            problems.append(f"status {response.status if response else None}, not {status}")
        self.check(page, name, url, status=status, problems=problems)

    def settle(self, page) -> list[str]:
        """Wait until the page has loaded and no request of its own has been in
        flight for SETTLED_AFTER seconds; what is still pending after SETTLE_TIMEOUT
        is a problem of the page (a poller that never rests)."""
        page.wait_for_load_state("load")
        quiet_since: float | None = None

        def settled() -> bool | None:
            nonlocal quiet_since
            if self.pending:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            return time.monotonic() - quiet_since >= SETTLED_AFTER if quiet_since else None

        # Playwright delivers the requests' events while it waits, not during a sleep.
        found = poll_until(
            lambda: settled() or None,
            every=0.025,
            timeout=SETTLE_TIMEOUT,
            sleep=lambda seconds: page.wait_for_timeout(seconds * 1000),
        )
        return [] if found else [f"requests still pending: {sorted(self.pending)[:5]}"]

    def check(
        self, page, name: str, url: str, *, status: int = 200, problems: list[str] | None = None
    ) -> None:
        """The page as it is now (visited, or reached by a form): reads well, with
        the keyboard and a screen reader too."""
        problems = list(problems or [])
        problems += page.evaluate(PAGE_PROBLEMS)
        problems += axe_problems(page)
        problems += page.evaluate(CHART_PROBLEMS)
        # The page as it loaded, before the keyboard walk moves its focus and scroll.
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True, timeout=120_000)
        problems += forms_keyboard_problems(page, self.forms_seen)
        # Chromium logs a page answered 403 or 404 as a failed resource: asked for here.
        expected = f"status of {status}" if status != 200 else None
        problems += [
            f"console: {e}"
            for e in self.errors
            if not (expected and expected in e) and not _admin_own_inline_style(url, e)
        ]
        self.errors.clear()
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
        page.on("request", lambda request: self.pending.add(request.url))
        page.on("requestfinished", lambda request: self.pending.discard(request.url))
        page.on("requestfailed", lambda request: self.pending.discard(request.url))
        return context, page


@dataclass
class Cast:
    reviewer: str
    organiser: str
    paper: int
    submissions: dict[str, int]
    pdf_submission: int
    agent: str
    task: str
    # What names the paper's authors: a blind page shows none of it.
    paper_names: list[str]


def cast_build(data: Path, monkeypatch) -> Cast:
    """The imported sample, the site's objective task, an organiser and a
    reviewer made as the README makes them, the paper the organiser will put in a
    review round, and two releases."""
    from experiments.shipped import objective_tasks_install
    from judging.models import Judge
    from judging.services.rubrics import ensure_default_rubrics
    from leaderboard.releases import release_create
    from submissions.models import Stage, Submission
    from submissions.selectors import submissions_newest

    # The migrations' rubrics (the ones reviewers fill in): an earlier live-server
    # test's flush took them, and the import adds MLR-Judge's inactive.
    ensure_default_rubrics()
    call_command("import_mlrbench", str(data), stdout=StringIO(), stderr=StringIO())
    objective_tasks_install()
    release_create(name="sample-1")
    release_create(name="sample-2")
    monkeypatch.setenv("WALK_PASSWORD", PASSWORD)
    for name, role in (("organiser", "--organiser"), ("reviewer", "--reviewer")):
        call_command(
            "accounts", "user-create", name, role, "--password-env", "WALK_PASSWORD",
            stdout=StringIO(),
        )  # fmt: skip
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
        .select_related("agent__team")
        .order_by("-pk")
        .first()
    )
    assert paper is not None
    agent = paper.agent
    names = [
        agent.name,
        agent.display_name,
        agent.team.name if agent.team else "",
        agent.base_model,
    ]
    names += list(Judge.objects.values_list("name", flat=True))
    task = Submission.objects.get(pk=by_stage[Stage.END2END]).task.slug
    return Cast(
        reviewer="reviewer",
        organiser="organiser",
        paper=paper.pk,
        submissions=by_stage,
        pdf_submission=pdf or by_stage[Stage.END2END],
        agent=agent.name,
        task=task,
        paper_names=sorted({name for name in names if name and len(name) > 3}),
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
        # The idea stage's: the reviewer's day visits it (the review joins it).
        **{f"agreement-{s}": f"/agreement/?stage={s}" for s in stages if s != "idea"},
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


def _pareto_caption(walk: Walk, page) -> None:
    # Issue 39, item 10: "⟩" read as ")"; the caption names its arrow.
    caption = page.get_by_test_id("cost-figure").locator("figcaption")
    walk.expect(
        "the Pareto caption names its arrow (→), no ⟩",
        caption.count() == 1 and "(→)" in caption.inner_text() and "⟩" not in caption.inner_text(),
    )


def _end2end_board(walk: Walk, page) -> None:
    _footnote("any judge flagged")(walk, page)
    _pareto_caption(walk, page)


PUBLIC_CHECKS = {
    "home": _home,
    "leaderboard-idea": _idea_board,
    "leaderboard-end2end": _end2end_board,
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
    # From the first dimension (the walk's Tab check moved the highlight along).
    for _ in range(page.locator("fieldset[data-shortcut-group]").count()):
        page.keyboard.press("[")
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


def _agreement_overall(page, stage: str) -> dict[str, int]:
    """The public agreement API's human-LLM gaps per dimension, as a visitor reads them."""
    data = page.request.get(f"/api/agreement/?stage={stage}").json()
    return {row["dimension"]: row["n_human_llm"] for row in data["dimensions"]}


def organiser_round(walk: Walk, page, visitor, cast: Cast) -> None:
    """The organiser's morning: the admin, a review round made and assigned in the
    browser, and its paper gone from the public pages while the round is open."""
    sign_in(page, cast.organiser, "/reviews/login/")
    walk.expect("organiser sign-in: back where they asked", page.url.endswith("/reviews/"))
    walk.visit(page, "organiser-admin", "/admin/")
    walk.expect(
        "the organiser's admin lists the site's models",
        page.locator("#content-main", has_text="MLR-Judge").count() > 0,
    )
    walk.visit(page, "organiser-rounds", "/reviews/rounds/")
    form = page.locator("form.stacked")
    form.locator("[name=name]").fill("Walk round")
    form.locator("[name=stage]").select_option("idea")
    form.locator("[name=reviewers_per_paper]").fill("1")
    form.locator("[name=due_at]").fill("2099-01-31T12:00")
    form.locator(f'input[name="submissions"][value="{cast.paper}"]').check()
    form.get_by_role("button", name="Create round").click()
    page.wait_for_url(re.compile(r"/reviews/rounds/\d+/$"))
    round_url = page.url.removeprefix(page.url.split("/reviews/")[0])
    # Hidden from "Create round" on, before anyone is assigned (issue 39, item 11).
    for url in (f"/submissions/{cast.paper}/", f"/api/submissions/{cast.paper}/"):
        walk.expect(
            f"an open round's paper is hidden from visitors: {url}",
            visitor.request.get(url).status == 404,
        )
    listed = visitor.request.get(f"/api/submissions/?stage=idea&agent={cast.agent}").json()
    walk.expect(
        "an open round's paper is off the public list",
        cast.paper not in {item["id"] for item in listed["results"]},
    )
    add = page.locator("form.filters", has=page.get_by_role("button", name="Add"))
    add.locator("[name=reviewer]").select_option(label=cast.reviewer)
    add.locator("[name=submission]").select_option(str(cast.paper))
    add.get_by_role("button", name="Add").click()
    page.wait_for_load_state("networkidle")
    walk.visit(page, "organiser-round", round_url)
    walk.expect(
        "the round lists the reviewer's assignment",
        page.get_by_test_id("assignments").locator("td", has_text=cast.reviewer).count() == 1,
    )


def reviewer_day(walk: Walk, page, cast: Cast) -> None:
    """The reviewer: signs in, the queue, the blind paper, every dimension scored
    with the keyboard alone, the texts typed, Tab to the button, Enter."""
    sign_in(page, cast.reviewer)
    walk.expect("reviewer sign-in lands on the queue", page.url.endswith("/reviews/"))
    walk.visit(page, "review-queue", "/reviews/")
    if page.locator("header a", has_text="Upload").count():
        walk.found["review-queue upload"] = ["a reviewer sees an Upload link"]
    link = page.locator('main a[href^="/reviews/papers/"]')
    walk.expect("the queue holds the assigned paper", link.count() == 1)
    paper_url = link.first.get_attribute("href") or ""
    walk.visit(page, "review-paper", paper_url)
    shown = page.evaluate(
        """() => { const main = document.querySelector('main').cloneNode(true);
          main.querySelectorAll('[data-testid="submission-paper"]').forEach(el => el.remove());
          return main.innerText + ' ' + document.title; }"""
    )
    named = [name for name in cast.paper_names if name.lower() in shown.lower()]
    walk.expect(f"blind paper: names no agent, team, model or judge ({named})", not named)
    walk.expect("blind paper: no LLM score", page.get_by_test_id("judgments-panel").count() == 0)
    review_keys_check(walk, page)

    # Keyboard only from here: back to the first dimension, a digit for each.
    groups = page.locator("fieldset[data-shortcut-group]").count()
    page.get_by_test_id("advance-after-scoring").focus()
    for _ in range(groups):
        page.keyboard.press("[")
    for _ in range(groups):
        page.keyboard.press("4")  # within every scale, confidence's 1-5 too
    scored = page.evaluate(
        """() => [...document.querySelectorAll('fieldset[data-shortcut-group]')]
          .filter(g => g.querySelector('input[type=radio]:checked')).length"""
    )
    walk.expect(f"review keys: every dimension scored ({scored} of {groups})", scored == groups)
    # Tab on to the text boxes and the button: the keyboard reaches them in order.
    typed = {"strengths": "A clear, testable idea.", "weaknesses": "No cost estimate."}
    submit = None
    for _ in range(20):
        page.keyboard.press("Tab")
        name = page.evaluate("() => document.activeElement.name || document.activeElement.type")
        if name in typed:
            page.keyboard.type(typed.pop(name))
        elif name == "submit":
            submit = page.evaluate("() => document.activeElement.textContent.trim()")
            break
    walk.expect(f"Tab reaches the texts, then the button ({submit})", not typed and bool(submit))
    page.keyboard.press("Enter")
    page.get_by_text("Review submitted.").wait_for()
    walk.expect(
        "the review is submitted",
        page.get_by_test_id("assignment-status").inner_text() == "Submitted",
    )


def organiser_release_round(walk: Walk, page) -> None:
    """Releasing the round's reviews, through its confirmation."""
    page.get_by_test_id("release-round").click()
    page.wait_for_load_state("networkidle")
    walk.check(page, "organiser-round-release", page.url)
    page.get_by_test_id("confirm-release").click()
    page.wait_for_load_state("networkidle")
    walk.expect(
        "the round's reviews are released",
        "released" in page.get_by_test_id("round-release").inner_text(),
    )


def reviewer_sees_agreement(walk: Walk, page, before: dict[str, int]) -> None:
    walk.visit(page, "agreement-idea", "/agreement/?stage=idea")
    cells = page.locator('tr[data-dimension] td[data-key="n_human_llm"]')
    after = [int(text) for text in cells.all_inner_texts() if text.strip().isdigit()]
    walk.expect(
        f"live agreement: the released review joins every dimension ({before} -> {after})",
        len(after) == len(before) and sum(after) > sum(before.values()),
    )


def organiser_judges_and_release(walk: Walk, page, judge_url: str) -> None:
    """The organiser's afternoon, in the admin: a judge (inactive: in no panel's
    way), a panel of it, a release; then the rest of their pages."""
    walk.visit(page, "organiser-admin-judge-add", "/admin/judging/judge/add/")
    page.locator("#id_name").fill("organiser-judge")
    page.locator("#id_model").fill("openai/qwen2.5-1.5b-instruct")
    page.locator("#id_api_base").fill(judge_url)
    page.locator("#id_is_active").uncheck()
    page.locator('input[name="_save"]').click()
    page.wait_for_load_state("networkidle")
    walk.visit(page, "organiser-admin-judges", "/admin/judging/judge/")
    walk.expect(
        "the admin lists the new judge",
        page.locator("#result_list", has_text="organiser-judge").count() == 1,
    )
    walk.visit(page, "organiser-admin-panel-add", "/admin/judging/judgepanel/add/")
    page.locator("#id_name").fill("organiser-panel")
    page.locator("#id_judges").select_option(label="organiser-judge")
    page.locator('input[name="_save"]').click()
    page.wait_for_load_state("networkidle")
    walk.expect(
        "the admin lists the new panel",
        page.locator("#result_list", has_text="organiser-panel").count() == 1,
    )
    walk.visit(page, "organiser-admin-release-add", "/admin/leaderboard/release/add/")
    page.locator("#id_name").fill("walk-1")
    # Freezing every board and writing the release's files takes a while.
    page.locator('input[name="_save"]').click(no_wait_after=True)
    page.wait_for_url(re.compile(r"/admin/leaderboard/release/$"), timeout=180_000)
    walk.expect(
        "the admin lists the new release",
        page.locator("#result_list", has_text="walk-1").count() == 1,
    )
    organiser_pages = {
        "agent-runs": "/agent-runs/",
        "agent-run-new": "/agent-runs/new/",
        "staff-submission-idea": "/submissions/{idea}/",
        "staff-submission-end2end": "/submissions/{end2end}/",
        "admin-rounds": "/admin/reviews/reviewround/",
        "admin-user-add": "/admin/auth/user/add/",
    }
    for name, url in organiser_pages.items():
        walk.visit(page, f"organiser-{name}", url.format(**walk.submissions))


# What a visitor reads of a published submission, the default board and the
# agreement page's default: the newcomer's judge must change none of it.
PUBLISHED_VIEWS = {
    "submission-end2end": '[data-testid="submission-status"], [data-testid="judgments-panel"]',
    "leaderboard-end2end": '[data-testid="leaderboard-summary"], [data-testid="leaderboard-table"]',
    "agreement-end2end": "tr[data-dimension]",
}


def published_views(page, selector: str) -> list[str]:
    return page.locator(selector).all_inner_texts()


def visitor_day(walk: Walk, page, cast: Cast) -> dict[str, list[str]]:
    seen = {}
    for name, url in public_pages(cast).items():
        walk.visit(page, name, url)
        if name in PUBLIC_CHECKS:
            PUBLIC_CHECKS[name](walk, page)
        if name in PUBLISHED_VIEWS:
            seen[name] = published_views(page, PUBLISHED_VIEWS[name])
        if name == "releases":
            walk.expect("the organiser's release is public", page.get_by_text("walk-1").count() > 0)
    walk.visit(page, "not-found", "/no-such-page/", status=404)
    if page.locator('main a[href="/"]').count() == 0:
        walk.found["not-found way back"] = ["the site's own page, with a link home"]
    return seen


def local_judge_recipe() -> list[str]:
    """The `judges add ... --panel NAME` command of the docs' local-judge recipe,
    as arguments."""
    import shlex

    from tests.support.docs import user_docs_text

    joined = re.sub(r"\\\n\s*", " ", user_docs_text())
    for line in joined.splitlines():
        if "judges add" in line and "--panel" in line and "--api-base" in line:
            return shlex.split(line.split("#")[0].split("manage.py", 1)[1])
    raise AssertionError("no `judges add ... --panel` line in the local-judge recipe")


def local_model(*, delay: float = 0.0):
    """The loopback server standing in for the newcomer's local model: a 7 on
    every dimension, and no hallucination found, each in its prompt's schema."""
    import json

    from tests.judging.helpers import review_answer
    from tests.support.fake_llm import answer

    checked = json.dumps(
        {
            "has_hallucination": False,
            "hallucinations": [],
            "overall_assessment": "the numbers match the log",
            "confidence": 4,
        }
    )

    def reply(body: dict):
        if "Hallucination types" in body["messages"][0]["content"]:
            return answer(checked, delay=delay)
        return answer(review_answer("end2end", score=7, overall=7), delay=delay)

    return reply


def newcomer_day(walk: Walk, browser, base_url: str, fake_llm, run_zip: Path) -> str:
    """A newcomer with a local judge: the recipe's `judges add --panel`, an account,
    a team and an agent made on /account/, a run uploaded in the browser; the
    upload's progress, then its own score on its page, labelled with its panel."""
    args = local_judge_recipe()
    args[args.index("--api-base") + 1] = fake_llm.url
    fake_llm.default = local_model()
    added = StringIO()
    call_command(*args, stdout=added, stderr=added)
    walk.expect(
        f"the recipe's judge is added: {added.getvalue()[-200:]}", "added" in added.getvalue()
    )
    # The local model is slow: the upload answers before its judge does (item 5).
    fake_llm.default = local_model(delay=6.0)
    call_command(
        "accounts", "user-create", "newcomer", "--password-env", "WALK_PASSWORD",
        stdout=StringIO(),
    )  # fmt: skip

    context, page = walk.context(browser, base_url)
    page.add_init_script(WATCH_PROGRESS)
    sign_in(page, "newcomer")
    walk.visit(page, "newcomer-account", "/account/")
    page.locator("form", has=page.get_by_role("button", name="Create team")).locator(
        "input[name=name]"
    ).fill("newcomers")
    page.get_by_role("button", name="Create team").click()
    page.wait_for_load_state("networkidle")
    agent_form = page.locator("form", has=page.get_by_role("button", name="Register agent"))
    agent_form.locator("[name=team]").select_option(label="newcomers")
    agent_form.locator("[name=name]").fill("newcomer-agent")
    agent_form.locator("[name=display_name]").fill("Newcomer's agent")
    page.get_by_role("button", name="Register agent").click()
    page.wait_for_load_state("networkidle")
    walk.visit(page, "newcomer-upload", "/submissions/new/")
    page.locator("#upload-form [name=agent]").select_option(label="newcomer-agent")
    page.locator("#upload-form [name=task]").fill(SAMPLE_TASK)
    page.locator("#upload-form [name=stage]").select_option("end2end")
    page.locator("#upload-form [name=archive]").set_input_files(str(run_zip))
    page.get_by_role("button", name="Upload").click()
    page.wait_for_url(re.compile(r"/submissions/\d+/$"), timeout=120_000)
    url = page.url.removeprefix(base_url)
    progress = progress_seen(page)
    walk.expect(
        f"upload: the bar moved to 100 ({progress[-3:]})",
        any(not hidden for hidden, _ in progress)
        and max((v for _, v in progress), default=0) == 100,
    )
    walk.expect(
        "upload: the page answers before the judge (judging in progress)",
        page.get_by_test_id("judging-progress").count() == 1
        and page.get_by_test_id("panel-score-local").count() == 0,
    )
    # The page follows the judge without a reload.
    page.get_by_test_id("panel-score-local").wait_for(timeout=90_000)
    walk.visit(page, "newcomer-submission", url)
    summary = page.get_by_test_id("summary-stage-score").inner_text()
    walk.expect(
        f"the newcomer's upload: its own score, its panel named ({summary})",
        "7.0 / 10 (local-qwen 7.0)" in summary and "panel local" in summary,
    )
    status = page.get_by_test_id("submission-status").inner_text()
    walk.expect(f"the newcomer's upload: judged ({status})", status == "Judged")
    context.close()
    return url


def pages_walk(browser, base_url: str, cast: Cast, fake_llm, run_zip: Path) -> Walk:
    """The organiser's, the reviewer's, a visitor's and the newcomer's days, one
    browser, a context each; every page visited once."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    walk = Walk()
    walk.submissions = cast.submissions
    visitor_context, visitor = walk.context(browser, base_url)
    organiser_context, organiser = walk.context(browser, base_url)
    reviewer_context, reviewer = walk.context(browser, base_url)
    before = _agreement_overall(visitor, "idea")

    organiser_round(walk, organiser, visitor, cast)
    reviewer_day(walk, reviewer, cast)
    walk.visit(reviewer, "review-forbidden", "/reviews/rounds/", status=403)
    walk.expect(
        "403: the site's page with a way back", reviewer.locator('main a[href="/"]').count() > 0
    )
    organiser_release_round(walk, organiser)
    reviewer_sees_agreement(walk, reviewer, before)
    reviewer_context.close()
    organiser_judges_and_release(walk, organiser, fake_llm.url)
    organiser_context.close()

    published = visitor_day(walk, visitor, cast)
    with without_a_broker():
        upload = newcomer_day(walk, browser, base_url, fake_llm, run_zip)
    urls = public_pages(cast)
    for name, selector in PUBLISHED_VIEWS.items():
        visitor.goto(urls[name])
        visitor.wait_for_load_state("networkidle")
        walk.expect(
            f"{name}: unchanged by the newcomer's judge",
            published_views(visitor, selector) == published[name],
        )
    walk.expect(
        "the newcomer's upload is not on the default board",
        visitor.locator(f'[data-testid="leaderboard-table"] a[href="{upload}"]').count() == 0,
    )
    visitor_context.close()
    walk.expect(
        f"the keyboard walk tabbed through the forms ({len(walk.forms_seen)})",
        len(walk.forms_seen) >= 20,
    )
    return walk


@contextmanager
def without_a_broker() -> Iterator[None]:
    """As the quick start runs without a broker: tasks run in the server's own
    threads after the response (BACKGROUND_THREADS), never inside the request."""
    from django.test.utils import override_settings

    from common.tasks import background_wait
    from mlrbench_site.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        with override_settings(BACKGROUND_THREADS=2, CELERY_TASK_ALWAYS_EAGER=True):
            yield
            background_wait(timeout=120)
    finally:
        app.conf.task_always_eager = previous


def test_every_page_reads_well_at_1366(
    browser, live_server, mlrbench_data, media_root, fake_llm, monkeypatch, tmp_path,
):  # fmt: skip
    assert AXE.is_file(), "axe-core is not installed: npm ci --prefix tests/e2e/axe"
    cast = cast_build(mlrbench_data, monkeypatch)
    run_zip = zip_folder(sample_run(mlrbench_data, "o4-mini"), tmp_path / "run.zip")
    walk = pages_walk(browser, live_server.url, cast, fake_llm, run_zip)
    found = "\n".join(
        f"{where}: {problem}" for where, items in walk.found.items() for problem in items
    )
    assert walk.found == {}, found
