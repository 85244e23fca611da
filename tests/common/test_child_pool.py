"""Large markdown and PDFs are parsed in a pool of children that is reused from
one document to the next, and a document past its budget still fails within
it and leaves a pool that works."""

import os
import time

import pytest

from common.child_pool import ChildTimeout, child_run, pool_close
from common.rendering import FALLBACK_NOTE_TIME, INLINE_RENDER_BYTES, markdown_render_budgeted
from submissions.pdf_text import PdfRefused, pdf_text_extract

SCIENTIST_PDF = "ai_scientist_v2_papers/o4-mini/iclr2025_bi_align/iclr2025_bi_align.pdf"
# Past the size that is rendered in the process itself.
LARGE_DOCUMENT = "# Results\n\n" + "A paragraph with **bold** words and a [link](x.md).\n\n" * (
    INLINE_RENDER_BYTES // 40
)


def test_documents_are_rendered_by_one_child_that_is_kept():
    child = child_run(os.getpid, timeout=60)

    first = markdown_render_budgeted(LARGE_DOCUMENT, timeout=60)
    second = markdown_render_budgeted(LARGE_DOCUMENT + "\nmore", timeout=60)

    assert "<strong>bold</strong>" in first.html and not first.note
    assert second.html.endswith("<p>more</p>\n")
    assert child != os.getpid()
    assert child_run(os.getpid, timeout=60) == child


def test_a_document_past_its_budget_fails_and_the_next_one_gets_a_fresh_child():
    child = child_run(os.getpid, timeout=60)

    with pytest.raises(ChildTimeout):
        child_run(time.sleep, 600, timeout=0.5)
    late = markdown_render_budgeted(LARGE_DOCUMENT, timeout=0.0001)
    rendered = markdown_render_budgeted(LARGE_DOCUMENT, timeout=60)

    assert late.note == FALLBACK_NOTE_TIME and "<strong>" not in late.html
    assert "<strong>bold</strong>" in rendered.html
    assert child_run(os.getpid, timeout=60) != child


def test_a_pdf_past_its_memory_budget_is_refused_and_the_next_one_is_read(settings, mlrbench_data):
    paper = mlrbench_data / SCIENTIST_PDF
    pool_close()  # a fresh child: the reader is loaded under the limit
    settings.PDF_TEXT_MEMORY_BYTES = 16 * 1024 * 1024

    with pytest.raises(PdfRefused, match="more memory than the site allows"):
        pdf_text_extract(paper, name="results/paper.pdf")
    settings.PDF_TEXT_MEMORY_BYTES = 1024 * 1024 * 1024
    text = pdf_text_extract(paper, name="results/paper.pdf")

    assert text.pages > 1 and len(text.text) > 1000
