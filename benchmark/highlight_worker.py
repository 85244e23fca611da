"""Run as `python -m benchmark.highlight_worker` with a JSON request on stdin
(`{"files": [{"path", "location"}], "file_seconds"}`): print one JSON line
`{"path", "html"}` per file highlighted within its time (see
`benchmark.highlight`). A child process of its own; imports nothing of Django."""

import json
import posixpath
import signal
import sys
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


def main() -> None:
    signal.signal(signal.SIGALRM, _stop)
    request = json.loads(sys.stdin.buffer.read())
    seconds = float(request["file_seconds"])
    for item in request["files"]:
        text = Path(item["location"]).read_bytes().decode("utf-8", errors="replace")
        # A lexer that is slow on this file is stopped between two of its steps.
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            html = _highlight_one(item["path"], text)
        except _FileTimeout:
            continue  # this file is shown as plain text
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout.write(json.dumps({"path": item["path"], "html": html}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
