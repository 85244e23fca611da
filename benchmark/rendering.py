"""Markdown from tasks and agents is untrusted: it is rendered with
`markdown` and then cleaned with `nh3`, so no script, event handler or
`javascript:`/`data:` URL survives."""

import html as html_lib
import re
from collections.abc import Callable

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe

_EXTENSIONS = ["extra", "sane_lists", "codehilite"]
_EXTENSION_CONFIGS = {"codehilite": {"guess_lang": False, "css_class": "highlight"}}

_ALLOWED_TAGS = nh3.ALLOWED_TAGS | {"img", "span", "div", "pre", "code", "sup", "sub", "hr"}
_ALLOWED_ATTRIBUTES = {
    **{tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()},
    "img": {"src", "alt", "title", "width", "height"},
    "a": {"href", "title"},
    "span": {"class"},
    "div": {"class"},
    "code": {"class"},
    "th": {"align"},
    "td": {"align"},
}
_URL_SCHEMES = {"http", "https", "mailto"}


def markdown_render(
    text: str,
    *,
    math: bool = False,
    image_src: Callable[[str], str | None] | None = None,
) -> SafeString:
    """Render untrusted markdown to clean HTML.

    `math`: keep `$...$`, `$$...$$`, `\\(...\\)` and `\\[...\\]` away from
    markdown (which would eat `_` and `*` in formulas) and emit them as
    `<span class="math math-inline|math-display">` text for KaTeX in the browser.
    `image_src`: maps each image's `src` to the URL to load it from, or None
    to drop the image (e.g. figures served from the artifact store only).
    """
    formulas: list[tuple[str, bool]] = []
    if math:
        text = _math_protect(text, formulas)
    html = markdown.markdown(
        text, extensions=_EXTENSIONS, extension_configs=_EXTENSION_CONFIGS, output_format="html"
    )
    if formulas:
        html = _MATH_TOKEN_RE.sub(lambda m: _math_html(*formulas[int(m.group(1))]), html)
    attribute_filter = None
    if image_src is not None:

        def attribute_filter(element: str, attribute: str, value: str) -> str | None:
            if element == "img" and attribute == "src":
                return image_src(value)
            return value

    cleaned = nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes=_URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        attribute_filter=attribute_filter,
    )
    return mark_safe(cleaned)  # noqa: S308 - nh3 has just cleaned it


# Code first, so that `$` inside code is never taken for math.
_MATH_RE = re.compile(
    r"(?P<code>^(?P<fence>```|~~~).*?^(?P=fence)|`[^`\n]+`)"
    r"|\$\$(?P<display>.+?)\$\$"
    r"|\\\[(?P<display2>.+?)\\\]"
    r"|\\\((?P<inline2>.+?)\\\)"
    r"|(?<![\\$\w])\$(?P<inline>[^\s$](?:[^$\n]*?[^\s$\\])?)\$(?![\w$])",
    re.DOTALL | re.MULTILINE,
)
_MATH_TOKEN_RE = re.compile(r"MLRBMATH(\d+)X")


def _math_protect(text: str, formulas: list[tuple[str, bool]]) -> str:
    def replace(match: re.Match) -> str:
        if match.group("code"):
            return match.group(0)
        display = match.group("display") or match.group("display2")
        formula = (
            display
            if display is not None
            else (
                match.group("inline2")
                if match.group("inline2") is not None
                else match.group("inline")
            )
        )
        formulas.append((formula.strip(), display is not None))
        return f"MLRBMATH{len(formulas) - 1}X"

    return _MATH_RE.sub(replace, text)


def _math_html(formula: str, display: bool) -> str:
    kind = "display" if display else "inline"
    return f'<span class="math math-{kind}">{html_lib.escape(formula, quote=False)}</span>'
