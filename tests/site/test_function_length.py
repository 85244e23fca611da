"""Issue 37, "modules by concept": no function of the site runs over 60 lines
without saying why in its docstring ("Long because ..."). A long function that
reads better split is split; one that does not says what keeps it whole."""

import ast

from tests.conftest import PROJECT_ROOT

from .test_layout import PROJECT_PACKAGES

MAX_LINES = 60
REASON = "long because"


def _long_functions_without_a_reason(source: str) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        docstring = (ast.get_docstring(node) or "").lower()
        if length > MAX_LINES and REASON not in docstring:
            found.append((node.name, length))
    return found


def test_no_function_runs_over_60_lines_without_a_reason():
    long = {
        f"{path.relative_to(PROJECT_ROOT)}:{name}": length
        for app in sorted(PROJECT_PACKAGES)
        for path in sorted((PROJECT_ROOT / app).rglob("*.py"))
        if "migrations" not in path.parts
        for name, length in _long_functions_without_a_reason(path.read_text(encoding="utf-8"))
    }
    assert long == {}


def test_a_long_function_needs_its_reason():
    body = "".join(f"    x{n} = {n}\n" for n in range(MAX_LINES))
    plain = f"def f():\n{body}"
    reasoned = f'def g():\n    """Long because it is a table."""\n{body}'
    short = "def h():\n    return 1\n"
    assert _long_functions_without_a_reason(plain + reasoned + short) == [("f", MAX_LINES + 1)]
