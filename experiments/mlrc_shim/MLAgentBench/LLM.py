"""MLRC-Bench's `MLAgentBench.LLM`, without the LLM: a run has no network.

`complete_text` is a documented no-op that answers an empty string, so task
code that imports it (through `from MLAgentBench.utils import *`) still runs;
nothing a score depends on calls it.
"""

import os

LOG_DIR = os.environ.get("MLRC_LOG_DIR", "logs")


def complete_text(prompt, log_file=None, model=None, **kwargs):
    """No LLM is reachable from the sandbox: always the empty string."""
    return ""


def complete_text_fast(prompt, **kwargs):
    return ""
