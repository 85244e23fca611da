"""Template filters for the blind review page: a submission's artifacts
from `submission` alone (the document as cleaned markdown, the code as a
list of links, the tail of the log). Links are relative, so a page serving the artifacts under
its own URL (the blind review page) resolves them itself."""

from urllib.parse import quote

from django import template
from django.utils.safestring import SafeString

from common.rendering import markdown_render
from submissions.derived import artifact_html, html_with_figures
from submissions.models import Artifact
from submissions.selectors import artifact_tail, trace_artifacts

from ..blind import blind_log_text

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
def artifact_markdown(artifact: Artifact) -> SafeString:
    """The document's HTML as stored at intake; its figures by their blind
    paths, relative to the page (`artifact.blind_paths`, set by `submission_blind`)."""
    derived = artifact_html(artifact)
    if derived is None:
        return markdown_render("*This document is too large to show here.*")
    blind_paths: dict[str, str] = getattr(artifact, "blind_paths", {})
    return html_with_figures(
        derived.content, lambda path: "./" + quote(blind_paths.get(path, path))
    )


@register.filter(name="artifact_tail")
def artifact_tail_filter(artifact: Artifact) -> str:
    return blind_log_text(artifact_tail(artifact), getattr(artifact, "identity_words", []))


@register.filter
def artifact_href(artifact) -> str:
    # `./` first: a path such as `a:b` must never read as a URL scheme.
    return "./" + quote(artifact.path)


@register.filter
def steps_href(artifact) -> str:
    """The trace viewer's blind page for a trace, or '' for any other file."""
    if not trace_artifacts([artifact]):
        return ""
    return artifact_href(artifact) + "?steps=1"
