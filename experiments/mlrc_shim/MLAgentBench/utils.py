"""`save_evals` as MLRC-Bench's task folders call it, without the LLM call."""

import ast
import inspect
import json
import os
import textwrap

EVALS_FILE = os.path.join("output", "idea_evals.json")


def _source(code) -> str:
    """A class's source, or a file's when given a path (main.py may pass either)."""
    if isinstance(code, str):
        with open(code, encoding="utf-8") as handle:
            return handle.read()
    try:
        return textwrap.dedent(inspect.getsource(code))
    except (OSError, TypeError):
        return ""


def logical_lines(code) -> int:
    """Logical lines as MLRC-Bench counts them: the `ast.stmt` nodes of the source."""
    try:
        tree = ast.parse(_source(code))
    except SyntaxError:
        return 0
    return sum(isinstance(node, ast.stmt) for node in ast.walk(tree))


def _evals_load() -> dict:
    try:
        with open(EVALS_FILE, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {"implementations": []}
    if isinstance(data, list):
        return {"implementations": data}
    if isinstance(data, dict) and isinstance(data.get("implementations"), list):
        return data
    return {"implementations": []}


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
    """Append this run's evaluation to output/idea_evals.json."""
    evals = _evals_load()
    evals["implementations"].append(
        {
            "task_name": task_name,
            "method_name": method_name,
            "phase": phase,
            "performance": score,
            "runtime": runtime,
            "method_complexity": logical_lines(method_class),
            "base_complexity": logical_lines(base_class),
        }
    )
    os.makedirs(os.path.dirname(EVALS_FILE), exist_ok=True)
    with open(EVALS_FILE, "w", encoding="utf-8") as handle:
        # NaN and infinities are written as Python writes them; the site refuses them.
        json.dump(evals, handle, indent=2, default=str)
    return evals
