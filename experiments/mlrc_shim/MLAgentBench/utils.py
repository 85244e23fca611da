"""`MLAgentBench.utils` as MLRC-Bench's task folders use it, without the LLM calls.

`save_evals` appends the evaluation to output/idea_evals.json with MLRC-Bench's
fields. Upstream it also asks an LLM to summarise the method (`explanation`);
here `summarize_code` and `get_llm_feedback` are documented no-ops (no network
in the sandbox), so `explanation` is empty.
"""

import ast
import inspect
import json
import os
import re
import textwrap

from MLAgentBench.constants import *  # noqa: F403 - upstream re-exports them
from MLAgentBench.constants import ALL_BASE_PERFORMANCE, ALL_BASE_RUNTIME
from MLAgentBench.LLM import LOG_DIR, complete_text  # noqa: F401 - upstream's names
from MLAgentBench.schema import EnvException  # noqa: F401 - upstream's names

EVALS_FILE = os.path.join("output", "idea_evals.json")


def _source(code) -> str:
    """A class's source, or a file's when given a path (main.py may pass either)."""
    if isinstance(code, str):
        if "\n" in code or not os.path.isfile(code):
            return code
        with open(code, encoding="utf-8") as handle:
            return handle.read()
    try:
        return textwrap.dedent(inspect.getsource(code))
    except (OSError, TypeError):
        return ""


def calculate_complexity(code) -> int:
    """Logical lines as MLRC-Bench counts them: the `ast.stmt` nodes of the source."""
    try:
        tree = ast.parse(_source(code))
    except SyntaxError:
        return 0
    return sum(isinstance(node, ast.stmt) for node in ast.walk(tree))


logical_lines = calculate_complexity


def sanitize_json_string(s):
    """Upstream's repair of an LLM's JSON answer."""
    # Upstream strips these characters (not the prefix) from both ends.
    s = s.strip("`json").strip("`").strip()
    s = s.replace("\\", "\\\\").replace("\b", "\\b").replace("\f", "\\f")
    s = s.replace("\r", "\\r").replace("\t", "\\t")
    return re.sub(
        r'"([^"]*)"', lambda m: '"' + m.group(1).replace("\n", "\\n").replace('"', '\\"') + '"', s
    )


def summarize_code(code):
    """No-op: upstream asks an LLM for a summary; the sandbox has none."""
    return ""


def get_llm_feedback(idea, code):
    """No-op: upstream asks an LLM; the sandbox has none."""
    return {}


def _evals_load() -> dict:
    try:
        with open(EVALS_FILE, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        data = None
    if isinstance(data, list):
        return {"idea": None, "implementations": data}
    if isinstance(data, dict) and isinstance(data.get("implementations"), list):
        return data
    idea = None
    if os.path.exists("idea.txt"):
        with open("idea.txt", encoding="utf-8", errors="replace") as handle:
            idea = handle.read()
    return {"idea": idea, "implementations": []}


def _percent(value, base):
    try:
        return 100 * (value - base) / base
    except (TypeError, ZeroDivisionError):
        return None


def evals_append(
    *, task_name, method_name, phase, score, runtime, method_complexity, base_complexity, code=""
):
    """One evaluation, with MLRC-Bench's fields, appended to output/idea_evals.json."""
    if hasattr(score, "__float__") and not isinstance(score, (str, bytes, bool)):
        score = float(score)  # numpy's scalars are numbers too
    base_runtime = ALL_BASE_RUNTIME.get(task_name, {}).get(phase)
    base_performance = ALL_BASE_PERFORMANCE.get(task_name, {}).get(phase)
    step = os.getenv("CURR_STEP", "")
    evals = _evals_load()
    evals["implementations"].append(
        {
            "task_name": task_name,
            "method_name": method_name,
            "phase": phase,
            "performance": score,
            "improvement_perc": _percent(score, base_performance),
            "step": int(step) if step.isdigit() else None,
            "relative_runtime": _percent(runtime, base_runtime),
            "relative_complexity": _percent(method_complexity, base_complexity),
            "runtime": runtime,
            "method_complexity": method_complexity,
            "base_complexity": base_complexity,
            "code": code,
            "explanation": summarize_code(code),
        }
    )
    os.makedirs(os.path.dirname(EVALS_FILE), exist_ok=True)
    with open(EVALS_FILE, "w", encoding="utf-8") as handle:
        # NaN and infinities are written as Python writes them; the site refuses them.
        json.dump(evals, handle, indent=2, default=str)
    return evals


def save_evals(
    task_name,
    method_name,
    method_class,
    base_class,
    score,
    phase,
    runtime,
    is_debug=False,
):
    """Append this run's evaluation to output/idea_evals.json (MLRC-Bench's fields)."""
    return evals_append(
        task_name=task_name,
        method_name=method_name,
        phase=phase,
        score=score,
        runtime=runtime,
        method_complexity=calculate_complexity(method_class),
        base_complexity=calculate_complexity(base_class),
        code=_source(method_class),
    )
