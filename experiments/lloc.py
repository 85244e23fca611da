"""Logical lines of code of a method: the site's own count (MLRC-Bench's
`calculate_complexity`, statements of the parsed source, is in common/stats.py).

Python: one per logical line (a statement that spans several physical lines
counts once; comments, blank lines and docstrings count zero), from the
tokenizer. Shell and other text code: non-blank lines that are not comments.
"""

import io
import tokenize

PYTHON_SUFFIXES = (".py",)
SCRIPT_SUFFIXES = (".sh", ".bash")
CODE_SUFFIXES = (*PYTHON_SUFFIXES, *SCRIPT_SUFFIXES, ".c", ".cc", ".cpp", ".cu", ".h", ".jl", ".r")


def python_lloc(source: str) -> int:
    count = 0
    line_tokens: list[tokenize.TokenInfo] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                significant = [
                    t
                    for t in line_tokens
                    if t.type
                    not in (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT)
                ]
                # A statement that is only a string is a docstring, not code.
                if significant and not (
                    len(significant) == 1 and significant[0].type == tokenize.STRING
                ):
                    count += 1
                line_tokens = []
            else:
                line_tokens.append(token)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text_lloc(source, comment="#")
    return count


def text_lloc(source: str, *, comment: str) -> int:
    return sum(
        1 for line in source.splitlines() if line.strip() and not line.strip().startswith(comment)
    )


def file_lloc(path: str, source: str) -> int:
    lower = path.lower()
    if lower.endswith(PYTHON_SUFFIXES):
        return python_lloc(source)
    if lower.endswith((*SCRIPT_SUFFIXES, ".r", ".jl")):
        return text_lloc(source, comment="#")
    if lower.endswith(CODE_SUFFIXES):
        return text_lloc(source, comment="//")
    return 0
