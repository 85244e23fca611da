"""Submissions with code files, stored under MEDIA_ROOT like uploaded ones.
The experiments app's tests make no model of their own: agents and
submissions come from their owning apps' factories."""

from collections.abc import Mapping
from typing import Any

from submissions.models import ArtifactKind, Submission
from tests.submissions.factories import SubmissionFactory, artifact_add


def submission_with_files(
    files: Mapping[str, str | bytes],
    *,
    kinds: Mapping[str, str] | None = None,
    **submission_fields: Any,
) -> Submission:
    """An experiment-stage submission whose files are artifacts: code unless
    `kinds` says otherwise."""
    submission = SubmissionFactory(experiment=True, **submission_fields)
    for path, content in files.items():
        artifact_add(submission, path, (kinds or {}).get(path, ArtifactKind.CODE), content)
    return submission
