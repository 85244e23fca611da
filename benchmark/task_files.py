"""Reading MLR-Bench task files (`tasks/<slug>.md`) into validated records.

Pure functions, no database: the import service validates every file first
and only then writes, so one bad file never leaves a half-imported catalogue.
"""

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from .models import TASK_SLUG_PATTERN, Topic

MAX_TASK_FILE_BYTES = 1_000_000

_SLUG_RE = re.compile(TASK_SLUG_PATTERN)
_H1_RE = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_ANY_HEADING_RE = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
# One published task (iclr2025_dl4c) has no heading at all and names itself
# in its first sentence: `The third DL4C workshop titled "..."`.
_TITLED_RE = re.compile(r'\btitled\s+"([^"\n]{3,200})"')


@dataclass(frozen=True)
class ParsedTask:
    slug: str
    title: str
    conference: str
    year: int
    description: str


@dataclass(frozen=True)
class TaskFileError:
    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def task_folder_resolve(path: Path) -> Path:
    """A folder of `<slug>.md` files, or a clone of the repository with `tasks/`."""
    if (path / "tasks").is_dir():
        return path / "tasks"
    return path


# Headings that name a section, not the workshop: 16 published tasks start
# with one ("About the Workshop", "Topics", "Overview", "Subject Areas").
GENERIC_HEADINGS = frozenset(
    {
        "about",
        "about the workshop",
        "about this workshop",
        "abstract",
        "background",
        "call for papers",
        "description",
        "descriptions",
        "introduction",
        "motivation",
        "overview",
        "scope",
        "subject areas",
        "summary",
        "topics",
        "workshop description",
        "workshop direction",
        "workshop overview",
        "workshop scope",
        "workshop summary",
    }
)
# Where no heading names it, the first lines usually do: "The AI for
# Accelerated Materials Discovery (AI4Mat) Workshop ...", "HAIC 2025, the
# First Workshop on Human-AI Coevolution, ...".
_NAMED_IN_TEXT_RES = (
    _TITLED_RE,
    re.compile(r"\b(Workshop on [A-Z][^,.()\n]{3,120}?)(?=[,.(\n]|\s+(?:at|focuses|aims)\b)"),
    re.compile(
        r"\b[Tt]he[ ]+((?:[A-Z0-9][\w&+-]*[ ]+)(?:(?:[A-Z0-9][\w&+-]*|and|for|in|of|on)[ ]+){0,11}?"
        r"(?:\([^)\n]{1,30}\)[ ]+)?[Ww]orkshop)\b"
    ),
)
_NAME_SEARCH_CHARS = 800
_SMALL_WORDS = frozenset({"and", "for", "in", "of", "on", "the", "to"})


def _heading_is_generic(heading: str) -> bool:
    return heading.strip().strip(":").casefold() in GENERIC_HEADINGS


def task_title_extract(text: str) -> str | None:
    """The workshop's name: its H1, else its first heading that is not a
    section name, else the name the text gives itself."""
    headings = [m.group(1).strip() for m in _ANY_HEADING_RE.finditer(text) if m.group(1).strip()]
    h1 = _H1_RE.search(text)
    if h1 and h1.group(1).strip() and not _heading_is_generic(h1.group(1)):
        first = next((h for h in headings if not _heading_is_generic(h)), None)
        # An H1 wins unless a real title comes before it (a "## Name" then "# Topics").
        if first is None or text.find(first) >= h1.start():
            return h1.group(1).strip()[:300]
    for heading in headings:
        if not _heading_is_generic(heading):
            return heading[:300]
    head = _ANY_HEADING_RE.sub("", text)[:_NAME_SEARCH_CHARS]
    for pattern in _NAMED_IN_TEXT_RES:
        match = pattern.search(head)
        if match and match.group(1).strip():
            return match.group(1).strip()[:300]
    return "" if headings else None


def task_title_from_slug(slug: str) -> str:
    """`neurips2023_mp2` -> `MP2 (NeurIPS 2023)`: the last resort for a title."""
    match = _SLUG_RE.match(slug)
    if not match:
        return slug
    conference, year, workshop = match.groups()
    words = [
        word if word in _SMALL_WORDS else (word.upper() if len(word) <= 4 else word.capitalize())
        for word in re.split(r"[_-]+", workshop)
        if word
    ]
    label = {"iclr": "ICLR", "icml": "ICML", "neurips": "NeurIPS"}[conference]
    return f"{' '.join(words)} ({label} {year})"


def task_description_body(text: str, title: str) -> str:
    """The description without the heading that became the page's title (the
    page shows the title as its own H1 already)."""
    for match in _ANY_HEADING_RE.finditer(text):
        if match.group(1).strip() == title:
            return text[: match.start()] + text[match.end() :].lstrip("\n")
        break
    return text


def task_file_parse(path: Path) -> ParsedTask | TaskFileError:
    slug_match = _SLUG_RE.match(path.stem)
    if path.suffix != ".md" or not slug_match:
        return TaskFileError(
            path,
            "the file name is not <conference><year>_<workshop>.md "
            "(conference is iclr, icml or neurips)",
        )
    try:
        size = path.stat().st_size
    except OSError as exc:
        return TaskFileError(path, f"cannot be read ({exc.strerror})")
    if size > MAX_TASK_FILE_BYTES:
        return TaskFileError(path, f"is larger than {MAX_TASK_FILE_BYTES} bytes")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        return TaskFileError(path, f"is not UTF-8 (byte {exc.start})")
    except OSError as exc:
        return TaskFileError(path, f"cannot be read ({exc.strerror})")
    text = text.removeprefix("\ufeff")
    if not text.strip():
        return TaskFileError(path, "is empty")
    if "\x00" in text:
        return TaskFileError(path, "contains NUL bytes")
    title = task_title_extract(text)
    if title is None:
        return TaskFileError(path, "has no markdown heading to take the title from")
    title = title or task_title_from_slug(path.stem)
    conference, year, _workshop = slug_match.groups()
    return ParsedTask(
        slug=path.stem, title=title, conference=conference, year=int(year), description=text
    )


def task_folder_parse(folder: Path) -> tuple[list[ParsedTask], list[TaskFileError]]:
    parsed: list[ParsedTask] = []
    errors: list[TaskFileError] = []
    for path in sorted(folder.iterdir()):
        if path.is_dir() or path.name.startswith("."):
            continue
        result = task_file_parse(path)
        if isinstance(result, TaskFileError):
            errors.append(result)
        else:
            parsed.append(result)
    return parsed, errors


_TOPIC_BY_NAME = {
    **{value: value for value in Topic.values},
    **{label.casefold(): value for value, label in Topic.choices},
}


def topics_csv_parse(path: Path) -> tuple[dict[str, str], list[str]]:
    """Read a `slug,topic` CSV; the topic is a key (`ml_theory`) or a label
    (`ML Theory`). Returns the mapping and one message per bad row."""
    topics: dict[str, str] = {}
    errors: list[str] = []
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError) as exc:
        return {}, [f"{path}: cannot be read as a UTF-8 CSV ({exc})"]
    for line, row in enumerate(rows, start=1):
        if not row or all(not cell.strip() for cell in row):
            continue
        if line == 1 and [c.strip().lower() for c in row[:2]] == ["slug", "topic"]:
            continue
        if len(row) != 2:
            errors.append(f"{path}:{line}: expected two columns slug,topic, got {len(row)}")
            continue
        slug, topic = row[0].strip(), row[1].strip()
        value = _TOPIC_BY_NAME.get(topic.casefold()) if topic else ""
        if value is None:
            errors.append(f"{path}:{line}: unknown topic {topic!r} for {slug}")
        elif slug in topics and topics[slug] != value:
            errors.append(f"{path}:{line}: {slug} is given two different topics")
        else:
            topics[slug] = value
    return topics, errors
