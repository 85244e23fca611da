"""Template filters that show a submission's artifacts from `submission`
alone: the document as cleaned markdown, the code as a list of links, the
tail of the log. Links are relative, so a page serving the artifacts under
its own URL (the blind review page) resolves them itself."""

from urllib.parse import quote

from django import template
from django.utils.safestring import SafeString

from benchmark.rendering import markdown_render

register = template.Library()

TEXT_LIMIT_BYTES = 2 * 1024 * 1024
TAIL_LINES = 200
TAIL_BYTES = 64 * 1024


def _read(artifact, limit: int, *, tail: bool = False) -> str:
    if not artifact.file:
        return ""
    try:
        with artifact.file.open("rb") as handle:
            if tail:
                size = artifact.file.size
                handle.seek(max(0, size - limit))
            data = handle.read(limit)
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")


@register.filter
def artifacts_of_kind(submission, kinds: str) -> list:
    wanted = {kind.strip() for kind in kinds.split(",")}
    return [a for a in submission.artifacts.all() if a.kind in wanted]


@register.filter
def first_kind_of(submission, kinds: str) -> list:
    """The artifacts of the first kind in `kinds` that the submission has."""
    artifacts = list(submission.artifacts.all())
    for kind in (k.strip() for k in kinds.split(",")):
        found = [a for a in artifacts if a.kind == kind]
        if found:
            return found
    return []


@register.filter
def artifact_markdown(artifact) -> SafeString:
    return markdown_render(_read(artifact, TEXT_LIMIT_BYTES))


@register.filter
def artifact_tail(artifact, lines: int = TAIL_LINES) -> str:
    text = _read(artifact, TAIL_BYTES, tail=True)
    return "\n".join(text.splitlines()[-int(lines) :])


@register.filter
def artifact_href(artifact) -> str:
    # `./` first: a path such as `a:b` must never read as a URL scheme.
    return "./" + quote(artifact.path)
