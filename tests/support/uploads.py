"""An archive uploaded to the submissions API, as the `mlrbench` client does."""

from __future__ import annotations

from pathlib import Path

from tests.benchmark.runs import SAMPLE_TASK


def upload(
    client,
    path: Path,
    *,
    token: str | None = None,
    agent: str = "my-agent",
    stage: str = "end2end",
    task: str = SAMPLE_TASK,
    **extra,
):
    """POST `path` to /api/submissions/ for `agent` on `task` at `stage`, with the
    API token `token` (none: the client's own login, or anonymous); `extra`
    fields (say `based_on`) go with it."""
    headers = {"HTTP_AUTHORIZATION": f"Token {token}"} if token else {}
    with path.open("rb") as handle:
        return client.post(
            "/api/submissions/",
            {"agent": agent, "task": task, "stage": stage, "archive": handle, **extra},
            **headers,
        )
