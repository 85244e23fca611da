"""The paper view marks each number the provenance ledger classed (issue 38):
by its class, with a label and a link to the step or file it came from, on the
stored sanitised HTML, never twice, never inside code, links or formulas."""

import re

import pytest

from common.rendering import markdown_render_budgeted
from submissions.ledger import entry_href, entry_label, submission_ledger
from submissions.models import Submission, SubmissionInput
from submissions.paper_marks import Mark, paper_marked

PAPER = "results/paper.md"


def _entry(text: str, line: int, klass: str = "measured", **evidence) -> dict:
    evidence = evidence or {"source": "output", "trace": "t.json", "step": 3, "tool": "Bash"}
    return {"text": text, "where": f"{PAPER}:{line}", "class": klass, "evidence": evidence}


def _marked(markdown: str, entries: list[dict]) -> tuple[str, int]:
    html = markdown_render_budgeted(markdown).html

    def mark_of(index: int, entry: dict) -> Mark:
        return Mark(entry["class"], entry_label(entry), entry_href(7, index, entry))

    return paper_marked(html, entries, paper=PAPER, mark_of=mark_of)


def _marks(html: str) -> list[tuple[str, str]]:
    """(class, number) of each mark."""
    mark = r'<mark class="prov prov-([\w-]+)(?: prov-common)?"[^>]*><a [^>]*>([^<]*)</a></mark>'
    return re.findall(mark, html)


TABLE = """# Results

The accuracy was 0.91 in prose (not a claim).

| Model | Accuracy | F1 |
|---|---|---|
| lr | 0.91 | 0.5 |
| Ours | 0.91 | `0.88` |
| Base | [0.70](https://example.org) | 0.75 |
"""


def test_each_classed_number_is_marked_once_in_its_row_not_in_prose_code_links_or_settings():
    entries = [
        _entry("0.91", 8),
        _entry("0.88", 8, "written", source="agent", trace="t.json", step=5, tool="Write"),
        _entry("0.75", 9, "untraced", note=None) | {"evidence": {}},
    ]
    html, count = _marked(TABLE, entries)
    assert count == 2
    assert _marks(html) == [("measured", "0.91"), ("untraced", "0.75")]
    # The prose's 0.91 and the setting row's (lr) are left as they were.
    assert "The accuracy was 0.91 in prose" in html
    assert "<td>0.91</td>" in html
    # Inside code: counted for the order, never wrapped.
    assert "<code>0.88</code>" in html
    assert 'aria-label="0.91, measured: printed by step 3 (Bash)"' in html
    assert 'href="/submissions/7/trace/t.json?step=3#step-3"' in html
    # A number with nowhere to link to links to the ledger's row below the paper.
    assert 'href="#provenance-row-2"' in html


def test_a_row_the_html_does_not_have_is_left_unmarked_and_later_rows_still_match():
    entries = [_entry("0.12", 4), _entry("0.75", 9)]
    html, count = _marked(TABLE, entries)
    assert count == 1
    assert _marks(html) == [("measured", "0.75")]


def test_two_equal_numbers_of_a_row_are_each_marked_once():
    markdown = "| A | B | C |\n|---|---|---|\n| x | 0.33 | 0.33 |\n"
    html, count = _marked(markdown, [_entry("0.33", 3), _entry("0.33", 3, "derived")])
    assert count == 2
    assert _marks(html) == [("measured", "0.33"), ("derived", "0.33")]
    # Marked again from the stored HTML: nothing is marked twice (the marks are links).
    again, _ = paper_marked(html, [_entry("0.33", 3)], paper=PAPER, mark_of=lambda i, e: None)
    assert again == html


def test_marks_are_escaped_and_cleaned_whatever_the_ledger_holds():
    hostile = _entry(
        "0.91",
        8,
        "measured",
        source="output",
        trace='"><script>alert(1)</script>',
        step=2,
        tool='"><img src=x onerror=alert(1)>',
    )
    html, count = _marked(TABLE, [hostile])
    assert count == 1
    assert "<script" not in html and "<img" not in html and "onerror=" not in html.split("&")[0]
    bad = Mark("measured", "x", "javascript:alert(1)")
    html, _ = paper_marked(
        markdown_render_budgeted(TABLE).html,
        [_entry("0.91", 8)],
        paper=PAPER,
        mark_of=lambda index, entry: bad,
    )
    assert "javascript:" not in html


def test_a_formula_s_numbers_are_left_alone():
    markdown = "| A | B |\n|---|---|\n| x | $0.25$ and 0.25 |\n"
    html = markdown_render_budgeted(markdown, math=True).html
    assert 'class="math' in html
    marked, count = paper_marked(
        html,
        [_entry("0.25", 3), _entry("0.25", 3)],
        paper=PAPER,
        mark_of=lambda index, entry: Mark("measured", "m", "#x"),
    )
    # The formula's 0.25 keeps its place in the row but is never wrapped.
    assert count == 1
    assert re.search(r'class="math[^"]*">\$?0\.25', marked) or "0.25</span>" in marked


# --- the real sample ------------------------------------------------------------


@pytest.mark.django_db
def test_the_claude_code_run_s_paper_marks_its_numbers_and_each_links_to_a_step_that_exists(
    sample, client
):
    run = Submission.objects.get(stage="end2end", agent__name="claude")
    ledger = submission_ledger(submission=run, compute=False)
    page = client.get(run.get_absolute_url()).content.decode()
    marks = re.findall(
        r'<mark class="prov prov-([\w-]+)(?: prov-common)?" id="prov-(\d+)"[^>]*><a href="([^"]+)" '
        r'title="([^"]*)" aria-label="([^"]*)">([^<]*)</a>',
        page,
    )
    assert marks
    assert 'data-testid="provenance-legend"' in page
    ids = [int(index) for _, index, *_ in marks]
    assert len(ids) == len(set(ids))  # never marked twice
    steps = 0
    for klass, index, href, title, aria, number in marks:
        assert title and aria.endswith(title)
        entry = ledger["entries"][int(index)]
        assert klass == entry["class"]
        assert number.replace("−", "-").rstrip("%").strip() in entry["text"].replace("−", "-")
        assert aria.startswith(f"{number}, {klass}: ")
        href = href.replace("&amp;", "&")
        if "/trace/" in href:
            steps += 1
            step = href.rsplit("#step-", 1)[1]
            trace = client.get(href.split("#")[0])
            assert trace.status_code == 200
            assert f'id="step-{step}"' in trace.content.decode()
    assert steps > 0
    # The summary counts them too.
    assert f"{ledger['counts']['measured']} measured, " in page
    assert 'data-testid="summary-provenance"' in page


@pytest.mark.django_db
def test_a_write_up_without_a_trace_says_provenance_unknown_with_no_marks_and_no_counts(
    sample, client
):
    writeup = Submission.objects.filter(stage="paper", inputs__isnull=True).first()
    if writeup is None:  # every write-up is linked to its run: unlink one
        writeup = Submission.objects.filter(stage="paper").first()
        SubmissionInput.objects.filter(submission=writeup).delete()
        from submissions.ledger import submission_ledger_compute

        submission_ledger_compute(submission=writeup)
    page = client.get(writeup.get_absolute_url()).content.decode()
    assert "no trace: provenance unknown" in page.lower()
    assert 'class="prov prov-' not in page.split('data-testid="provenance"')[0]
    summary = re.search(r'data-testid="summary-provenance"[^>]*>([^<]*)', page)
    assert summary and summary.group(1).strip(" ·\n") == "no trace: provenance unknown"
    assert " measured, " not in page
