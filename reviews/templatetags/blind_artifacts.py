"""Template filters for the blind review page: a submission's artifacts
from `submission` alone (the document as cleaned markdown, the code as a
list of links, the tail of the log). Links are relative, so a page serving the artifacts under
its own URL (the blind review page) resolves them itself."""

from urllib.parse import quote

from django import template
from django.utils.safestring import SafeString

from common.rendering import markdown_render
from submissions.derived import artifact_html, artifact_trace, html_with_figures
from submissions.models import Artifact
from submissions.selectors import LOG_TAIL_LINES, artifact_tail, trace_artifacts
from submissions.traces import trace_format_of

from ..blind import blind_agent_log_text, blind_log_text, trace_blind_file

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
    """The log's last lines, blind; a trace's are those of the file the blind
    page serves for it (no tokens, no costs)."""
    words = getattr(artifact, "identity_words", [])
    reader = trace_format_of(getattr(artifact, "real_path", artifact.path), artifact.kind)
    if reader == "json":
        trace = artifact_trace(artifact)
        lines = trace_blind_file(trace, words).splitlines() if trace else []
        return "\n".join(lines[-LOG_TAIL_LINES:])
    if reader is not None:
        return blind_agent_log_text(artifact_tail(artifact), words)
    return blind_log_text(artifact_tail(artifact), words)


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
