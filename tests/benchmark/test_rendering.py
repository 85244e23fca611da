"""Untrusted markdown is rendered once, at intake, under a budget, GitHub's
way; pages serve what was stored, and no reader's browser fetches a remote
image (issue 20, finding 1)."""

import pytest

from benchmark import rendering
from benchmark.archives import IntakeLimits
from benchmark.intake import submission_intake
from benchmark.models import DerivedArtifact, DerivedKind

from .factories import AgentFactory, TaskFactory
from .runs import PNG, SAMPLE_TASK, zip_entries

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
