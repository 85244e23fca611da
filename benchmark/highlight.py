"""Source files are highlighted once, at intake, and the HTML is stored
(`DerivedArtifact`, kind `source_html`); the file page serves what was stored.

Pygments' lexers are regular expressions, and some are quadratic on hostile
input (the Makefile lexer takes seconds on 8 KB of `_`): highlighting runs in
one child process per upload (`benchmark.highlight_worker`), each file
within `SOURCE_HIGHLIGHT_FILE_SECONDS`, all of them within what is left of the
upload's budget. A file past `SOURCE_HIGHLIGHT_MAX_BYTES`, past its time, or
without stored HTML (data from before this existed) is shown as escaped plain
text, which is linear: no request ever runs a lexer.
"""

import html as html_lib
import json
import posixpath
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from .run_layout import TEXT_SUFFIXES

# Bump when the highlighter's output changes: stored HTML is then ignored (shown plain).
HIGHLIGHT_VERSION = 1
# Never sent to the highlighter: images and PDFs are shown as what they are, and
# markdown documents have their own rendering.
_NOT_SOURCE = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".pdf", ".md", ".markdown")


@dataclass(frozen=True)
class SourceFile:
    path: str
    location: Path


def is_source(path: str, kind: str) -> bool:
    """Whether the file page shows `path` as text (as `artifact_delivery` serves it)."""
    lower = path.lower()
    if lower.endswith(_NOT_SOURCE):
        return False
    return posixpath.splitext(lower)[1] in TEXT_SUFFIXES or kind in ("log", "code")


def source_plain_html(text: str) -> str:
    """Escaped text in the source box: what a file without stored HTML shows."""
    return f'<pre class="plain">{html_lib.escape(text, quote=False)}</pre>'


def sources_highlight(files: list[SourceFile], *, timeout: float) -> dict[str, str]:
    """Highlighted HTML of each file, by path, for those done within `timeout`
    seconds in all (the others are left out: their page shows plain text)."""
    wanted = [
        {"path": item.path, "location": str(item.location)}
        for item in files
        if item.location.stat().st_size <= settings.SOURCE_HIGHLIGHT_MAX_BYTES
    ]
    if not wanted or timeout <= 0:
        return {}
    request = {"files": wanted, "file_seconds": settings.SOURCE_HIGHLIGHT_FILE_SECONDS}
    try:
        done = subprocess.run(  # noqa: S603 - our own module, arguments we built
            [sys.executable, "-m", "benchmark.highlight_worker"],
            input=json.dumps(request).encode(),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        output = done.stdout
    except subprocess.TimeoutExpired as exc:
        # What the child finished before the budget ran out is kept.
        output = exc.stdout or b""
    highlighted: dict[str, str] = {}
    for line in output.decode("utf-8", errors="replace").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue  # the last line of a child that was stopped mid-write
        if isinstance(item, dict) and isinstance(item.get("html"), str):
            highlighted[str(item.get("path"))] = item["html"]
    return highlighted
