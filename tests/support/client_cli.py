"""The `mlrbench` command-line client run as a user runs it: its own package
(client/) alone on the path, no Django settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLIENT = Path(__file__).resolve().parents[2] / "client"


def client_environment(**variables: str) -> dict[str, str]:
    """PATH and the client's package, and `variables` (MLRBENCH_URL, MLRBENCH_TOKEN)."""
    return {"PATH": os.environ["PATH"], "PYTHONPATH": str(CLIENT), **variables}


def mlrbench_run(url: str, *args: str, token: str | None = None) -> subprocess.CompletedProcess:
    """`mlrbench ARGS` against the site at `url`, as `token`'s user where given."""
    variables = {"MLRBENCH_URL": url}
    if token is not None:
        variables["MLRBENCH_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "mlrbench_client", *args],
        env=client_environment(**variables),
        capture_output=True,
        text=True,
        timeout=120,
    )
