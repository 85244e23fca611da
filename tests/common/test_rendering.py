"""Untrusted markdown is rendered once, at intake, under a budget, GitHub's
way; pages serve what was stored, and no reader's browser fetches a remote
image (issue 20, finding 1)."""

import pytest

from common import rendering
from submissions.archives import IntakeLimits
from submissions.intake import submission_intake
from submissions.models import DerivedArtifact, DerivedKind
from tests.benchmark.factories import AgentFactory, TaskFactory
from tests.benchmark.runs import PNG, SAMPLE_TASK, zip_entries

pytestmark = pytest.mark.django_db

GITHUB_PAPER = b"""# Results

Table 1 shows the scores:
| method | score |
|--------|-------|
| ours   | 0.91  |
Our findings:
- first
- second

![fig](fig.png) ![remote](https://tracker.example.org/pixel.png)
"""


def _intake(tmp_path, entries: dict[str, bytes]):
    archive = zip_entries(tmp_path / "run.zip", entries)
    return submission_intake(
        agent=AgentFactory(),
        task=TaskFactory(slug=SAMPLE_TASK),
        stage="paper",
        archive=archive,
        archive_name="run.zip",
        uploader=None,
        source="upload",
        limits=IntakeLimits.from_settings(),
    )


def _never_render(*args, **kwargs):
    raise AssertionError("a page rendered untrusted markdown")


def _paper(html: str) -> str:
    return html.split('data-testid="paper"', 1)[1].split("</article>", 1)[0]


def test_the_pathological_paper_is_rendered_at_intake_and_the_page_serves_the_stored_html(
    client, media_root, tmp_path, monkeypatch
):
    submission = _intake(tmp_path, {"results/paper.md": b"[" * 40_000})

    stored = DerivedArtifact.objects.get(artifact__submission=submission, kind=DerivedKind.HTML)
    assert stored.content.count("[") == 40_000
    monkeypatch.setattr(rendering, "markdown_html", _never_render)
    monkeypatch.setattr(rendering, "_render_in_child", _never_render)
    response = client.get(f"/submissions/{submission.pk}/")

    assert response.status_code == 200
    assert "[[[[" in _paper(response.content.decode())


def test_tables_and_lists_right_after_a_paragraph_line_render_as_github_does(
    client, media_root, tmp_path
):
    submission = _intake(tmp_path, {"results/paper.md": GITHUB_PAPER, "results/fig.png": PNG})

    paper = _paper(client.get(f"/submissions/{submission.pk}/").content.decode())

    assert "<table>" in paper and "<td>0.91</td>" in paper
    assert "|--------|" not in paper
    assert "<li>first</li>" in paper
    assert f'src="/submissions/{submission.pk}/raw/results/fig.png"' in paper
    assert "tracker.example.org" not in paper


def test_past_the_time_budget_a_document_is_shown_as_escaped_text_with_a_note(
    client, media_root, tmp_path, settings
):
    settings.MARKDOWN_RENDER_TIMEOUT_SECONDS = 0.001
    # Past the inline size and seconds of work (emphasis on every word): the
    # pool's child, already started, would render a small document within 1 ms.
    text = b"<b>bold</b> " + b"*x* " * 20_000
    submission = _intake(tmp_path, {"results/paper.md": text})

    paper = _paper(client.get(f"/submissions/{submission.pk}/").content.decode())

    assert rendering.FALLBACK_NOTE_TIME in paper
    assert "&lt;b&gt;bold&lt;/b&gt;" in paper and "<b>" not in paper


def test_a_large_document_renders_in_the_child_within_the_budget():
    text = "# Title\n\n" + "word " * rendering.INLINE_RENDER_BYTES + "\n\n$x_1$"

    rendered = rendering.markdown_render_budgeted(text, math=True, timeout=60)

    assert rendered.note == ""
    assert "<h1>Title</h1>" in rendered.html
    assert '<span class="math math-inline">x_1</span>' in rendered.html


def test_the_task_page_serves_the_description_rendered_once(client, monkeypatch):
    task = TaskFactory(description="# The task\n\nIntro line:\n- one\n- two\n")
    first = client.get(f"/tasks/{task.slug}/").content.decode()
    monkeypatch.setattr(rendering, "markdown_html", _never_render)

    again = client.get(f"/tasks/{task.slug}/").content.decode()

    assert "<li>one</li>" in first and "<li>one</li>" in again


def test_math_protection_of_a_large_document_runs_in_the_child_not_the_web_process(monkeypatch):
    """Issue 32, finding 1: formulas were protected in the web process, before
    and outside the child's budget (`\\[` a million times: 50 s). The parent
    now hands the raw text to the child, which does all of it in its budget."""

    def in_the_parent(text, formulas):
        raise AssertionError("math protection ran in the web process")

    monkeypatch.setattr(rendering, "_math_protect", in_the_parent)
    text = "# M\n\nThe loss $x_1$ and\n\n\\[a_*b\\]\n\n" + "\\[" * 20_000
    assert len(text.encode()) > rendering.INLINE_RENDER_BYTES

    rendered = rendering.markdown_render_budgeted(text, math=True, timeout=60)

    assert rendered.note == ""
    assert '<span class="math math-inline">x_1</span>' in rendered.html
    assert '<span class="math math-display">a_*b</span>' in rendered.html


def test_the_math_scanner_finds_each_closer_once_however_many_openers(monkeypatch):
    """`\\[` repeated: a regex's lazy look ahead rescanned 1,000 characters
    from each; the scanner searches each stretch of the text once."""
    searched: list[int] = []

    class Counting(rendering._NextFind):
        def __call__(self, start: int) -> int:
            before = (self.start, self.found)
            found = super().__call__(start)
            if (self.start, self.found) != before:
                end = len(self.text) if found == -1 else found
                searched.append(end - start)
            return found

    text = "\\[" * 5_000 + "x\\]"
    monkeypatch.setattr(rendering, "_NextFind", Counting)
    formulas: list[tuple[str, bool]] = []
    rendering._math_protect(text, formulas)
    assert sum(searched) <= 2 * len(text)
    assert formulas  # the last opener in reach of the closer is a formula


def test_a_math_token_the_author_typed_stays_as_typed():
    html = rendering.markdown_render_budgeted("$a$ and MLRBMATH7X", math=True).html
    assert '<span class="math math-inline">a</span>' in html
    assert "MLRBMATH7X" in html
