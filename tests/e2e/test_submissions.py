import re

import pytest

from submissions.archives import IntakeLimits
from submissions.intake import submission_intake
from tests.benchmark.factories import AgentFactory, TaskFactory, TeamFactory, UserFactory
from tests.benchmark.runs import PNG, SAMPLE_TASK, sample_run, zip_entries, zip_folder
from tests.e2e.upload_progress import WATCH_PROGRESS, progress_seen
from tests.submissions.test_submission_pages import MALICIOUS_PAPER

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_builder_signs_in_uploads_a_run_and_sees_the_paper_with_its_figures(
    page, media_root, mlrbench_data, tmp_path
):
    user = UserFactory(username="grace")
    AgentFactory(
        name="grace-agent",
        display_name="Grace's agent",
        team=TeamFactory(members=[user]),
        o4_mini=True,
    )
    TaskFactory(slug=SAMPLE_TASK, title="Workshop on Bidirectional Human-AI Alignment")
    archive = zip_folder(sample_run(mlrbench_data, "o4-mini"), tmp_path / "run.zip")
    page.add_init_script(WATCH_PROGRESS)

    page.goto("/")
    page.get_by_role("link", name="Sign in").click()
    page.get_by_label("Username").fill("grace")
    page.get_by_label("Password").fill("a-long-test-password")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("link", name="Upload").click()
    page.get_by_label("Agent").select_option(label="grace-agent")
    page.get_by_label("Task").fill(SAMPLE_TASK)
    page.get_by_label("Stage").select_option("end2end")
    page.get_by_label("Archive").set_input_files(str(archive))
    page.get_by_role("button", name="Upload").click()

    page.wait_for_url(re.compile(r"/submissions/\d+/$"))
    progress = progress_seen(page)
    # The bar was shown and moved while the archive went up.
    assert any(not hidden for hidden, _ in progress)
    assert max(value for _, value in progress) == 100
    assert page.locator("main > h1").inner_text().startswith("End to end run of Grace's agent")
    paper = page.get_by_test_id("paper")
    assert "Uncertainty" in paper.inner_text() or paper.inner_text().strip()
    figure = paper.locator("img").first
    figure.scroll_into_view_if_needed()
    page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=figure.element_handle()
    )
    assert "/raw/results/" in figure.get_attribute("src")
    assert page.get_by_test_id("log-tail").inner_text().strip()


def test_a_refused_upload_shows_the_services_message_without_leaving_the_form(
    page, media_root, tmp_path
):
    user = UserFactory(username="ada")
    AgentFactory(name="ada-agent", team=TeamFactory(members=[user]), o4_mini=True)
    TaskFactory(slug=SAMPLE_TASK)
    archive = zip_entries(tmp_path / "run.zip", {"claude_code/main.py": b"print(1)"})

    page.goto("/accounts/login/?next=/submissions/new/")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("a-long-test-password")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_label("Agent").select_option(label="ada-agent")
    page.get_by_label("Task").fill(SAMPLE_TASK)
    page.get_by_label("Stage").select_option("paper")
    page.get_by_label("Archive").set_input_files(str(archive))
    page.get_by_role("button", name="Upload").click()

    errors = page.get_by_test_id("upload-errors")
    errors.wait_for()
    # The script reads the one error shape: the field, then the service's own words.
    assert errors.inner_text().startswith("archive: the paper stage needs a paper")
    assert page.url.endswith("/submissions/new/")


def test_script_payloads_in_a_paper_never_run(page, media_root, tmp_path):
    agent = AgentFactory()
    task = TaskFactory(slug=SAMPLE_TASK)
    archive = zip_entries(
        tmp_path / "run.zip", {"results/paper.md": MALICIOUS_PAPER, "results/fig.png": PNG}
    )
    submission = submission_intake(
        agent=agent,
        task=task,
        stage="end2end",
        archive=archive,
        archive_name="run.zip",
        uploader=None,
        source="upload",
        limits=IntakeLimits.from_settings(),
    )
    dialogs: list[str] = []

    def on_dialog(dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)

    page.goto(f"/submissions/{submission.pk}/")
    paper = page.get_by_test_id("paper")
    paper.get_by_text("click me").click()
    paper.get_by_text("markdown link").click()
    paper.get_by_text("styled").click()

    assert page.evaluate("typeof window.__xss") == "undefined"
    assert dialogs == []
    assert paper.locator("script, iframe, object, svg, [onerror], [onclick]").count() == 0
    # The site's own scripts still run: KaTeX typeset the formulas.
    assert paper.locator(".katex").count() >= 2
