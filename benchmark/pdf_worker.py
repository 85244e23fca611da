"""A PDF's text as `{"text", "pages", "truncated"}` or `{"error"}`, read in a child
process (`extract_budgeted`, run by `common.child_pool`), so that the intake can bound
an untrusted PDF's time and memory (see `benchmark.pdf_text`); imports nothing of
Django. `python -m benchmark.pdf_worker PATH MAX_PAGES MAX_CHARS MAX_MEMORY` prints the
same as JSON."""

import json
import sys


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
            text = page.extract_text() or ""
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
