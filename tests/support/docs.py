"""The Markdown a user reads: the README and the pages under docs/. Tests that
check a command, a recipe or a table the documentation gives read all of it
through here, so a section that moves from one page to another stays checked."""

import re
from pathlib import Path

from markdown_it import MarkdownIt

PROJECT_ROOT = Path(__file__).resolve().parents[2]
README = PROJECT_ROOT / "README.md"
DOCS = PROJECT_ROOT / "docs"


def user_docs() -> list[Path]:
    """README.md and every page under docs/, README first."""
    return [README, *sorted(DOCS.glob("*.md"))]


def user_docs_text() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in user_docs())


def section(heading: str) -> str:
    """The text under the one heading `heading` (`## Topics`) in the user docs,
    up to the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    found = []
    for path in user_docs():
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(rf"^{re.escape(heading)}[ \t]*$", text, re.M):
            rest = text[match.end() :]
            end = re.search(rf"^#{{1,{level}}} ", rest, re.M)
            found.append(rest[: end.start()] if end else rest)
    assert len(found) == 1, f"{heading!r} is in the docs {len(found)} times, not once"
    return found[0]


def markdown() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def github_slug(text: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but `-` and `_`
    dropped, spaces made hyphens."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a Markdown file (a repeated one gets -1, -2, ...)."""
    tokens = markdown().parse(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    result: set[str] = set()
    for opening, inline in zip(tokens, tokens[1:], strict=False):
        if opening.type != "heading_open":
            continue
        text = "".join(child.content for child in inline.children or [])
        slug = github_slug(text)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def links(path: Path) -> list[str]:
    """Every link and image target of a Markdown file (never one inside code)."""
    targets = []
    for token in markdown().parse(path.read_text(encoding="utf-8")):
        for child in token.children or []:
            if child.type == "link_open":
                targets.append(str(child.attrs["href"]))
            elif child.type == "image":
                targets.append(str(child.attrs["src"]))
    return targets
