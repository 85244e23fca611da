"""Markdown from tasks and agents is untrusted: it is rendered with
`markdown` and then cleaned with `nh3`, so no script, event handler or
`javascript:`/`data:` URL survives."""

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


def markdown_render(text: str) -> SafeString:
    html = markdown.markdown(
        text, extensions=_EXTENSIONS, extension_configs=_EXTENSION_CONFIGS, output_format="html"
    )
    cleaned = nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes=_URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(cleaned)  # noqa: S308 - nh3 has just cleaned it
