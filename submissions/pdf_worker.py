"""A PDF's text as `{"text", "pages", "truncated"}` or `{"error"}`, read in a child
process (`extract_budgeted`, run by `common.child_pool`), so that the intake can bound
an untrusted PDF's time and memory (see `submissions.pdf_text`); imports nothing of
Django. `python -m submissions.pdf_worker PATH MAX_PAGES MAX_CHARS MAX_MEMORY` prints the
same as JSON."""

import json
import re
import sys

# Conference templates (ICLR, ICML, NeurIPS review copies) number the margin's
# lines: the reader gives them as a run of lines holding only 000, 001, 002, ...
# A run this long of consecutive numbers is the margin, never the paper's text.
MARGIN_RUN = 8
_NUMBER_LINE = re.compile(r"\s*(\d{1,4})\s*")


def margin_numbers_drop(text: str) -> str:
    """`text` without its runs of consecutive line numbers (the PDF keeps them)."""
    lines = text.split("\n")
    keep = [True] * len(lines)
    start = 0
    while start < len(lines):
        first = _NUMBER_LINE.fullmatch(lines[start])
        if first is None:
            start += 1
            continue
        end, expected = start + 1, int(first.group(1)) + 1
        while end < len(lines):
            number = _NUMBER_LINE.fullmatch(lines[end])
            if number is None or int(number.group(1)) != expected:
                break
            end, expected = end + 1, expected + 1
        if end - start >= MARGIN_RUN:
            keep[start:end] = [False] * (end - start)
        start = end
    return "\n".join(line for line, kept in zip(lines, keep, strict=True) if kept)


def extract(path: str, max_pages: int, max_chars: int) -> dict[str, object]:
    import logging

    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    # pypdf logs every repaired oddity; the result says what matters.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            return {"error": "the PDF is encrypted; upload it without a password"}
        pages = len(reader.pages)
        if pages == 0:
            return {"error": "the PDF has no pages"}
        if pages > max_pages:
            return {"error": f"the PDF has {pages} pages; at most {max_pages} are accepted"}
        parts: list[str] = []
        used = 0
        truncated = False
        for page in reader.pages:
            text = margin_numbers_drop(page.extract_text() or "")
            if used + len(text) > max_chars:
                parts.append(text[: max_chars - used])
                truncated = True
                break
            parts.append(text)
            used += len(text) + 2
    except PdfReadError as exc:
        return {"error": f"the PDF cannot be read ({type(exc).__name__}: {str(exc)[:200]})"}
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # any failure of the reader on untrusted input is a refusal
        return {"error": f"the PDF cannot be read ({type(exc).__name__}: {str(exc)[:200]})"}
    return {"text": "\n\n".join(parts), "pages": pages, "truncated": truncated}


def extract_budgeted(
    path: str, max_pages: int, max_chars: int, max_memory: int
) -> dict[str, object]:
    """`extract` under an address-space limit of `max_memory` bytes (in a child
    of `common.child_pool`; the limit is lifted again once it is done)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = max_memory if hard == resource.RLIM_INFINITY else min(max_memory, hard)
    # Before pypdf is imported (the child's first PDF): a PDF that makes the reader
    # balloon fails here.
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        return extract(path, max_pages, max_chars)
    except MemoryError:
        failure = "reading the PDF needed more memory than the site allows"
    except RecursionError:
        failure = "the PDF cannot be read (its structure nests too deeply)"
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    return {"error": failure}


def main(argv: list[str]) -> None:
    result = extract_budgeted(argv[1], int(argv[2]), int(argv[3]), int(argv[4]))
    sys.stdout.write(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv)
