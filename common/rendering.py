"""Markdown from tasks and agents is untrusted: it is rendered once (at intake,
on import, when a task is saved) and the clean HTML is stored; pages serve
what was stored (`submissions/derived.py`).

Rendering is markdown-it-py (CommonMark with GitHub's tables and
strikethrough, so a table or a list right after a paragraph line renders as
GitHub shows it), then `nh3`, so no script, event handler or
`javascript:`/`data:` URL survives. markdown-it is linear on adversarial input,
and so is the formula scanner (`_MathScanner`, no regex that rescans from each
opener); a document past `INLINE_RENDER_BYTES` is rendered, formulas included,
in a child process (the pool of `common.child_pool`) under a hard time
budget as well: past the budget, or past the size limit, the document is kept
as escaped preformatted text with a note.

Images: only relative ones that name a figure of the same submission are
kept, with `src` pointing at `ARTIFACT_SRC_PREFIX` + the figure's path; each
page replaces the prefix with its own URL for the submission's files
(`submissions.derived.html_with_figures`). Every other image is dropped, so no reader's
browser fetches anything from elsewhere.
"""

import html as html_lib
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

import nh3
from django.conf import settings
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from mdit_py_plugins.footnote import footnote_plugin

from common.child_pool import ChildFailed, ChildTimeout, child_run

_ALLOWED_TAGS = nh3.ALLOWED_TAGS | {"img", "span", "div", "pre", "code", "sup", "sub", "hr", "del"}
_ALLOWED_ATTRIBUTES = {
    **{tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()},
    "img": {"src", "alt", "title", "width", "height"},
    "a": {"href", "title", "id"},
    "span": {"class"},
    "div": {"class"},
    "code": {"class"},
    # Alignment as a class (`_align_classes`): the pages' CSP allows no inline style.
    "th": {"class"},
    "td": {"class"},
    "li": {"id"},
    "sup": {"class", "id"},
}
_URL_SCHEMES = {"http", "https", "mailto"}
# Where a kept figure's `src` points in stored HTML; never a URL a browser resolves.
ARTIFACT_SRC_PREFIX = "/__submission_files__/"
# Below this, markdown-it (linear) renders in the process itself.
INLINE_RENDER_BYTES = 32 * 1024
FALLBACK_NOTE_TIME = "This document took too long to render; it is shown as plain text."
FALLBACK_NOTE_SIZE = "This document is too large to render; it is shown as plain text."


@dataclass(frozen=True)
class RenderedHtml:
    html: str  # clean HTML, figures under ARTIFACT_SRC_PREFIX
    note: str = ""  # set when the document is shown as plain text instead


def _fence_rule(
    self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    # No syntax highlighting in documents: a lexer's regular expressions are
    # not linear on every input, and a document is rendered in the request's
    # process when it is small.
    token = tokens[idx]
    language = token.info.strip().split(maxsplit=1)[0] if token.info.strip() else ""
    css = f' class="language-{html_lib.escape(language)}"' if language else ""
    return f"<pre><code{css}>{html_lib.escape(token.content, quote=False)}</code></pre>\n"


def _parser() -> MarkdownIt:
    # Raw HTML in markdown is kept as HTML for nh3 to clean, inline only: an
    # HTML block would take the markdown after it, up to a blank line, as
    # raw text. Every link is parsed as a link, and nh3 drops the URLs it
    # does not allow.
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.disable("html_block")
    md.use(footnote_plugin)
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    md.add_render_rule("fence", _fence_rule)
    md.core.ruler.push("align_classes", _align_classes)
    return md


_ALIGNMENTS = {"left", "right", "center"}


def _align_classes(state: StateCore) -> None:
    """A table column's alignment as `class="align-right"`, not markdown-it's
    `style="text-align:right"`, which the pages' content security policy blocks."""
    for token in state.tokens:
        if token.type not in ("th_open", "td_open"):
            continue
        style = str(token.attrs.pop("style", ""))
        align = style.removeprefix("text-align:").strip()
        if align in _ALIGNMENTS:
            token.attrSet("class", f"align-{align}")


_PARSER: list[MarkdownIt] = []


def markdown_html(text: str) -> str:
    """markdown-it's HTML, not yet cleaned (linear in the input)."""
    if not _PARSER:
        _PARSER.append(_parser())
    return str(_PARSER[0].render(text))


def _clean(html: str, image_src: Callable[[str], str | None] | None) -> str:
    def attribute_filter(element: str, attribute: str, value: str) -> str | None:
        if element == "img" and attribute == "src":
            return image_src(value) if image_src is not None else None
        return value

    return nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes=_URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        attribute_filter=attribute_filter,
    )


def _plain(text: str, note: str) -> RenderedHtml:
    escaped = html_lib.escape(text, quote=False)
    return RenderedHtml(
        html=f'<p class="render-note"><em>{note}</em></p>\n<pre class="plain">{escaped}</pre>',
        note=note,
    )


def _render_in_child(text: str, *, math: bool, timeout: float) -> str | None:
    """markdown-it's HTML (formulas protected in the child too) from a child of
    the pool (`common.child_pool`), or None past the time budget."""
    if timeout <= 0:
        return None
    try:
        return child_run(_source_html, text, math, timeout=timeout)
    except (ChildTimeout, ChildFailed):
        return None


def markdown_render_budgeted(
    text: str,
    *,
    math: bool = False,
    image_src: Callable[[str], str | None] | None = None,
    max_bytes: int | None = None,
    timeout: float | None = None,
) -> RenderedHtml:
    """Render untrusted markdown to clean HTML, within the size and time budget.

    `math`: `$...$`, `$$...$$`, `\\(...\\)` and `\\[...\\]` are left for KaTeX
    in the browser as `<span class="math math-inline|math-display">` text.
    `image_src`: maps each image's `src` to the one to keep, or None to drop it.
    """
    max_bytes = settings.MARKDOWN_RENDER_MAX_BYTES if max_bytes is None else max_bytes
    timeout = settings.MARKDOWN_RENDER_TIMEOUT_SECONDS if timeout is None else timeout
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        return _plain(text, FALLBACK_NOTE_SIZE)
    # Everything done to the text, formulas included, runs in the child for
    # a large document: within its time budget, off the web process.
    if size <= INLINE_RENDER_BYTES:
        html: str | None = _source_html(text, math)
    else:
        html = _render_in_child(text, math=math, timeout=timeout)
    if html is None:
        return _plain(text, FALLBACK_NOTE_TIME)
    return RenderedHtml(html=_clean(html, image_src))


def markdown_render(text: str, *, math: bool = False) -> SafeString:
    """Short trusted-size markdown (a site message) as clean HTML, images dropped."""
    return mark_safe(markdown_render_budgeted(text, math=math).html)  # noqa: S308 - cleaned


def figure_resolver(document_path: str, figures: set[str]) -> Callable[[str], str | None]:
    """Keep an image only when its relative `src` names one of `figures` (paths
    in the submission), so the reader's browser never fetches from elsewhere."""
    base = posixpath.dirname(document_path)

    def resolve(src: str) -> str | None:
        parts = urlsplit(src)
        if parts.scheme or parts.netloc or src.startswith("/"):
            return None
        path = posixpath.normpath(posixpath.join(base, unquote(parts.path)))
        if path not in figures:
            return None
        return ARTIFACT_SRC_PREFIX + quote(path)

    return resolve


# Formulas are at most MAX_FORMULA_CHARS long: an unclosed `\\[` then costs a
# bounded look ahead, never a scan to the end of the document.
MAX_FORMULA_CHARS = 1000
_MATH_TOKEN_RE = re.compile(r"MLRBMATH(\d+)X")
# Where a formula or a code span may start; everything else is skipped at C speed.
_MATH_START_RE = re.compile(r"[`~$\\]")
_DISPLAY_CLOSERS = {"$$": "$$", "\\[": "\\]", "\\(": "\\)"}


class _NextFind:
    """Where `sub` next occurs at or after a position, for positions that
    only grow: each stretch of the text is searched once, whatever the number
    of openers (a regex's lazy `.{1,1000}?` rescans up to 1,000 characters
    from every `\\[`, which is quadratic-like on `\\[` repeated)."""

    def __init__(self, text: str, sub: str):
        self.text = text
        self.sub = sub
        self.start = 0
        self.found = -2  # not searched yet

    def __call__(self, start: int) -> int:
        if self.found == -1:
            return -1  # none after an earlier start: none after this one
        if self.found == -2 or not self.start <= start <= self.found:
            self.start = start
            self.found = self.text.find(self.sub, start)
        return self.found


class _MathScanner:
    """`$…$`, `$$…$$`, `\\(…\\)` and `\\[…\\]` out of markdown's way, leftmost
    first, code (fences and spans) kept as it is; linear in the text."""

    def __init__(self, text: str, formulas: list[tuple[str, bool]]):
        self.text = text
        self.formulas = formulas
        self.find = {sub: _NextFind(text, sub) for sub in ("`", "\n", "$", "$$", "\\]", "\\)")}
        self.fence_find = {fence: _NextFind(text, "\n" + fence) for fence in ("```", "~~~")}

    def run(self) -> str:
        text, out, at, done = self.text, [], 0, 0
        while (found := _MATH_START_RE.search(text, at)) is not None:
            start = found.start()
            end, token = self._match(start)
            if end is None:
                at = start + 1
                continue
            out.append(text[done:start])
            out.append(text[start:end] if token is None else token)
            at = done = end
        out.append(text[done:])
        return "".join(out)

    def _formula(self, formula: str, display: bool) -> str:
        self.formulas.append((formula.strip(), display))
        return f"MLRBMATH{len(self.formulas) - 1}X"

    def _match(self, i: int) -> tuple[int | None, str | None]:
        """(end, token) of what starts at `i`: token None keeps the text (code)."""
        text = self.text
        head = text[i : i + 3]
        if head in ("```", "~~~") and (i == 0 or text[i - 1] == "\n"):
            close = self.fence_find[head](i + 2)
            if close != -1:
                return close + 4, None
        char = text[i]
        if char == "`":
            return self._code_span(i), None
        if char == "~":
            return None, None
        pair = text[i : i + 2]
        if pair in _DISPLAY_CLOSERS:
            close = self.find[_DISPLAY_CLOSERS[pair]](i + 3)
            if close != -1 and close - (i + 2) <= MAX_FORMULA_CHARS:
                display = pair != "\\("
                return close + 2, self._formula(text[i + 2 : close], display)
        if char == "$":
            return self._inline_dollar(i)
        return None, None

    def _code_span(self, i: int) -> int | None:
        close = self.find["`"](i + 1)
        if close <= i + 1:
            return None
        newline = self.find["\n"](i + 1)
        return close + 1 if newline == -1 or newline > close else None

    def _inline_dollar(self, i: int) -> tuple[int | None, str | None]:
        text = self.text
        before = text[i - 1] if i else ""
        if before and (before in "\\$" or _is_word(before)):
            return None, None
        first = text[i + 1 : i + 2]
        if not first or first.isspace() or first == "$":
            return None, None
        close = self.find["$"](i + 1)
        if close == -1:
            return None, None
        if close > i + 2:
            newline = self.find["\n"](i + 1)
            last = text[close - 1]
            if (newline != -1 and newline < close) or last.isspace() or last == "\\":
                return None, None
        after = text[close + 1 : close + 2]
        if after and (after == "$" or _is_word(after)):
            return None, None
        return close + 1, self._formula(text[i + 1 : close], False)


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _math_protect(text: str, formulas: list[tuple[str, bool]]) -> str:
    """Formulas out of markdown's way (it would eat `_` and `*`), as tokens."""
    return _MathScanner(text, formulas).run()


def _math_restore(html: str, formulas: list[tuple[str, bool]]) -> str:
    def replace(match: re.Match[str]) -> str:
        number = int(match.group(1))
        # A token the author typed themselves is left as they typed it.
        return _math_html(*formulas[number]) if number < len(formulas) else match.group(0)

    return _MATH_TOKEN_RE.sub(replace, html) if formulas else html


def _source_html(text: str, math: bool) -> str:
    """markdown-it's HTML of `text`, formulas protected first (all linear);
    what the child process runs for a large document."""
    formulas: list[tuple[str, bool]] = []
    source = _math_protect(text, formulas) if math else text
    return _math_restore(markdown_html(source), formulas)


def _math_html(formula: str, display: bool) -> str:
    kind = "display" if display else "inline"
    return f'<span class="math math-{kind}">{html_lib.escape(formula, quote=False)}</span>'
