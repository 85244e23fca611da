"""Template filters for the blind review page: a submission's artifacts
from `submission` alone (the document as cleaned markdown, the code as a
list of links, the tail of the log). Links are relative, so a page serving the artifacts under
its own URL (the blind review page) resolves them itself."""

from urllib.parse import quote

from django import template
from django.utils.safestring import SafeString

from benchmark.rendering import markdown_render
from benchmark.submission_selectors import artifact_tail, artifact_text

register = template.Library()


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
    text = artifact_text(artifact)
    if text is None:
        return markdown_render("*This document is too large to show here.*")
    return markdown_render(text)


@register.filter(name="artifact_tail")
def artifact_tail_filter(artifact) -> str:
    return artifact_tail(artifact)


@register.filter
def artifact_href(artifact) -> str:
    # `./` first: a path such as `a:b` must never read as a URL scheme.
    return "./" + quote(artifact.path)
