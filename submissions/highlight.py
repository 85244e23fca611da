"""Source files are highlighted once, at intake, and the HTML is stored
(`DerivedArtifact`, kind `source_html`); the file page serves what was stored.

Pygments' lexers are regular expressions, and some are quadratic on hostile
input (the Makefile lexer takes seconds on 8 KB of `_`): highlighting runs in
a child of the pool the renderers use (`common.child_pool`, the function in
`submissions.highlight_worker`), one file at a time, each within
`SOURCE_HIGHLIGHT_FILE_SECONDS`, all of them within what is left of the
upload's budget; a child past that budget is killed and the files not done by
then are left out. (A process per upload cost a Python start per run: most of
an import's time on the runs with code.) A file past `SOURCE_HIGHLIGHT_MAX_BYTES`,
past its time, or without stored HTML (data from before this existed) is shown as
escaped plain text, which is linear: no request ever runs a lexer.

What is stored is bounded too (issue 40: 30 KB of zipped newlines made 188 MB
of HTML): a file of more than `SOURCE_HIGHLIGHT_MAX_LINES` lines (a log, a
`.txt`) is never highlighted (its page shows escaped text without a line-number
table), a file's HTML is at most `SOURCE_HIGHLIGHT_MAX_HTML_BYTES`, an upload's
derived HTML at most `INTAKE_MAX_DERIVED_BYTES` together, and all of an
upload's highlighting takes at most `SOURCE_HIGHLIGHT_UPLOAD_SECONDS`.
"""

import html as html_lib
import posixpath
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from common.child_pool import ChildFailed, ChildTimeout, child_run

from .highlight_worker import highlight_budgeted
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


def sources_highlight(
    files: list[SourceFile], *, timeout: float, max_bytes: int | None = None
) -> dict[str, str]:
    """Highlighted HTML of each file, by path, for those done within `timeout`
    seconds in all and within `max_bytes` of HTML together (the others are left
    out: their page shows plain text)."""
    limit = settings.SOURCE_HIGHLIGHT_MAX_BYTES
    wanted = [item for item in files if item.location.stat().st_size <= limit]
    if not wanted or timeout <= 0:
        return {}
    deadline = time.monotonic() + timeout
    room = settings.INTAKE_MAX_DERIVED_BYTES if max_bytes is None else max_bytes
    highlighted: dict[str, str] = {}
    for item in wanted:
        left = deadline - time.monotonic()
        if left <= 0 or room <= 0:
            break
        try:
            html = child_run(
                highlight_budgeted,
                item.path,
                str(item.location),
                settings.SOURCE_HIGHLIGHT_FILE_SECONDS,
                settings.SOURCE_HIGHLIGHT_MAX_LINES,
                min(settings.SOURCE_HIGHLIGHT_MAX_HTML_BYTES, room),
                timeout=left,
            )
        except ChildTimeout:
            break  # the budget is spent; what was done before it is kept
        except ChildFailed:
            continue  # this file is shown as plain text
        if html is not None:
            highlighted[item.path] = html
            room -= len(html.encode("utf-8"))
    return highlighted
