"""Highlighting of one source file in a child of `common.child_pool`
(`highlight_budgeted`, run by `submissions.highlight`): the HTML, or None when the
lexer ran past the file's time. Imports nothing of Django (the child has no
settings)."""

import posixpath
import signal
from pathlib import Path


class _FileTimeout(Exception):
    pass


def _highlight_one(path: str, text: str) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import TextLexer, get_lexer_for_filename
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_for_filename(posixpath.basename(path), stripnl=False)
    except ClassNotFound:
        lexer = TextLexer(stripnl=False)
    return highlight(text, lexer, HtmlFormatter(cssclass="highlight", linenos="table"))


def _stop(signum: int, frame: object) -> None:
    raise _FileTimeout


def highlight_budgeted(
    path: str, location: str, seconds: float, max_lines: int, max_html_bytes: int
) -> str | None:
    """The highlighted HTML of the file at `location` (shown as `path`), or None
    when the lexer is still at it after `seconds`, the file has more than
    `max_lines` lines or its HTML would be more than `max_html_bytes` (the file
    is shown as plain text). The alarm stops a slow lexer between two of its
    steps; the pool's timeout stops one that never returns."""
    # NUL is no character of a text (PostgreSQL refuses it in one, so the whole
    # upload failed): shown as U+FFFD, as markdown shows it.
    text = Path(location).read_bytes().decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    # Each line costs a row of the line-number table whatever it holds: 256 KiB
    # of newlines made 9 MB of HTML. Counted before any lexer runs.
    if text.count("\n") + 1 > max_lines:
        return None
    previous = signal.signal(signal.SIGALRM, _stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        html = _highlight_one(path, text)
    except _FileTimeout:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    # Measured here, so that an oversized result never crosses to the parent.
    return html if len(html.encode("utf-8")) <= max_html_bytes else None
