"""Run as `python -m benchmark.pdf_worker PATH MAX_PAGES MAX_CHARS MAX_MEMORY`: print the PDF's
text as JSON (`{"text", "pages", "truncated"}` or `{"error"}`). A child process of
its own, so that the intake can bound an untrusted PDF's time and memory (see
`benchmark.pdf_text`); imports nothing of Django."""

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


def main(argv: list[str]) -> None:
    import resource

    # Before pypdf is imported: a PDF that makes the reader balloon fails here.
    memory = int(argv[4])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    try:
        result = extract(argv[1], int(argv[2]), int(argv[3]))
    except MemoryError:
        result = {"error": "reading the PDF needed more memory than the site allows"}
    except RecursionError:
        result = {"error": "the PDF cannot be read (its structure nests too deeply)"}
    sys.stdout.write(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv)
