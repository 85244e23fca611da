"""Where every number a paper reports came from: a ledger read from the agent's
own trace, at intake, with no LLM call (issue 38).

Pure functions over plain data (the parsed trace steps of `submissions.traces`,
the texts of the run's papers, logs, results and code), so the computation can
run in a child of the intake's pool (`common.child_pool`): no Django here.

Each number the paper reports as a result (`common.claims.paper_claim_cells`:
table cells, not hyperparameters, not the references) gets one class, tried in
this order:

* **measured**: printed by a command the agent executed (the result of a
  `Bash`, `exec` or `run` call), found in a data file (.json, .csv, .log, .txt)
  the agent read and never wrote itself, or in a shipped log or results file
  that the agent never wrote with a write tool and that a command or the code
  names (so a command made it); the earliest such place is the evidence;
* **hard-coded**: measured, but the number is a literal in text the agent typed
  at or before the step that printed it (a command line, a file written or
  edited with a write tool); for a shipped log or file, a literal of the
  shipped code: code that prints made-up numbers;
* **derived**: equal (within the claims tolerance) to the difference, ratio or
  percentage change of two measured numbers of the same table row, or the mean
  of the measured numbers of its row or of its column;
* **written**: present only in text the agent wrote itself (a write or edit
  call's content, a command line, the paper written in the trace, a shipped
  results file no command or code names);
* **untraced**: found nowhere.

A literal matches a claim when it rounds to it (times or divided by 100 too);
a printed number matches within the claims tolerance, as the reproduction
check's. A claim of at most one significant digit (0.5, 1.0, 0.008, 0.000) is
marked `common`: such a number is everywhere, so it is classed but never
counts towards the verdict (`ledger_verdict`).
"""

from __future__ import annotations

import bisect
import dataclasses
import posixpath
import re
import time
from dataclasses import dataclass, field
from typing import Any

from common.claims import (
    ClaimCell,
    Number,
    claim_allowance,
    numbers_kept,
    paper_claim_cells,
    significant_digits,
)

# Bump when the ledger's shape or rules change: stored ledgers are computed again.
# 2: a file's evidence names the line; the claims' link rule is linear.
PROVENANCE_VERSION = 2
CLASSES = ("measured", "derived", "hard-coded", "written", "untraced")
# The statuses whose ledger places numbers; every other says provenance is unknown.
KNOWN_STATUSES = ("traced", "log only")

EXEC_TOOLS = frozenset({"bash", "exec", "run", "shell", "local_shell"})
WRITE_TOOLS = frozenset(
    {"write", "edit", "multiedit", "notebookedit", "apply_patch", "write_file", "create_file"}
)
READ_TOOLS = frozenset({"read", "read_file"})
# Files whose numbers a read call may take as produced by the run (not .md:
# the task and proposal the agent was given are markdown).
DATA_READ_SUFFIXES = (".json", ".jsonl", ".csv", ".tsv", ".log", ".txt", ".out")
CODE_SUFFIXES = (".py", ".sh", ".bash", ".ipynb", ".r", ".jl", ".js", ".ts", ".yaml", ".yml")
# After the trace's last step: where shipped files sit in the order of things.
SHIPPED = 10**12
# A paper's first this many result numbers are placed (a crafted paper of 2 MB of
# table cells holds 300,000: its ledger stays a page's worth, the rest is noted).
CLAIMS_MAX = 5000
# A table block at most this many measured numbers large is searched for derived ones.
DERIVED_MAX_VALUES = 64
# A shipped file is searched in its first this many characters (a results JSON
# can be megabytes of per-trial data; the numbers a paper reports come early).
FILE_MAX_CHARS = 1_000_000
_PATH_RE = re.compile(r"^(?:file_path|path|file|filename|target_file): *(\S.*)$", re.MULTILINE)
_PATCH_PATH_RE = re.compile(r"^\*\*\* (?:Add|Update) File: *(\S.*)$", re.MULTILINE)
_NAME_RE = re.compile(r"[\w.-]+\.[A-Za-z0-9]{1,6}")

NO_TRACE = "no trace: provenance unknown"
# What can and cannot be traced in a run whose paper is a PDF (AI Scientist v2's).
PDF_NOTE = (
    "the paper is a PDF: its tables are not read as claims, so no number is placed. "
    "AI Scientist v2 ships a PDF paper, its best solutions' code and JSON summaries of its "
    "tree search: they say which nodes ran and the metrics each reported, not which executed "
    "command printed a number or what the agent typed, so no number is called measured, "
    "hard-coded or written from them"
)


@dataclass(frozen=True)
class Place:
    """A text the ledger searches: a command's output, an agent's write, a file."""

    source: str  # output | read | log | file | agent
    position: int
    trace: str = ""
    step: int | None = None
    tool: str = ""
    file: str = ""
    how: str = ""
    line: int | None = None  # in a shipped file: the line the number is on

    def evidence(self) -> dict[str, Any]:
        found: dict[str, Any] = {"source": self.source}
        for key in ("trace", "step", "tool", "file", "line", "how"):
            value = getattr(self, key)
            if value not in ("", None):
                found[key] = value
        return found


class _Windows:
    """The values any claim could match (within its allowance, times or divided by
    100): a number outside them is never kept, so a large log costs a scan."""

    def __init__(self, claims: list[Number], tolerance: float):
        spans = []
        for claim in claims:
            allowed = claim_allowance(claim, tolerance)
            for scale in (1.0, 0.01, 100.0):
                low, high = (claim.value - allowed) * scale, (claim.value + allowed) * scale
                spans.append((min(low, high), max(low, high)))
        spans.sort()
        merged: list[list[float]] = []
        for low, high in spans:
            if merged and low <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], high)
            else:
                merged.append([low, high])
        self.lows = [span[0] for span in merged]
        self.highs = [span[1] for span in merged]

    def __call__(self, value: float) -> bool:
        at = bisect.bisect_right(self.lows, value) - 1
        return at >= 0 and value <= self.highs[at]


@dataclass
class _Index:
    """For each value found, the earliest place it was found, for window look-ups."""

    keep: _Windows
    claims_only: bool
    values: list[float] = field(default_factory=list)
    places: list[tuple[Place, str]] = field(default_factory=list)
    _earliest: dict[float, tuple[Place, str]] = field(default_factory=dict)

    def add(self, text: str, place: Place) -> None:
        for number in numbers_kept(text, "", self.keep, claims_only=self.claims_only):
            known = self._earliest.get(number.value)
            if known is None or place.position < known[0].position:
                at = place
                if place.file and place.step is None:
                    at = dataclasses.replace(place, line=int(number.where.rsplit(":", 1)[1]))
                self._earliest[number.value] = (at, number.text)

    def freeze(self) -> None:
        self.values = sorted(self._earliest)
        self.places = [self._earliest[value] for value in self.values]

    def hits(self, claim: Number, allowed: float) -> list[tuple[Place, str]]:
        """Every value within `allowed` of the claim, or of the claim divided or
        multiplied by 100 (a fraction reported as a percentage, or back)."""
        found = []
        for scale in (1.0, 0.01, 100.0):
            low = (claim.value - allowed) * scale
            high = (claim.value + allowed) * scale
            start = bisect.bisect_left(self.values, min(low, high))
            end = bisect.bisect_right(self.values, max(low, high))
            found.extend(self.places[start:end])
        return found


@dataclass(frozen=True)
class TraceInput:
    path: str
    steps: list[dict[str, Any]]
    truncated: bool = False
    format: str = ""


@dataclass(frozen=True)
class FileInput:
    path: str
    kind: str  # an ArtifactKind value: paper, results, log, code, data, ...
    text: str


@dataclass
class _Sources:
    printed: _Index  # measured candidates
    agent: _Index  # text the agent typed
    code: _Index  # literals of code: shipped code files, commands, code the agent wrote
    written_paths: dict[str, int] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    exec_calls: int = 0

    @classmethod
    def for_claims(cls, claims: list[Number], tolerance: float) -> _Sources:
        keep = _Windows(claims, tolerance)
        return cls(_Index(keep, True), _Index(keep, False), _Index(keep, False))

    def indexes(self) -> tuple[_Index, ...]:
        return (self.printed, self.agent, self.code)


def _call_path(call: dict[str, Any]) -> str:
    arguments = str(call.get("arguments") or "")
    found = _PATH_RE.search(arguments) or _PATCH_PATH_RE.search(arguments)
    return found.group(1).strip().strip("'\"") if found else ""


def _same_file(trace_path: str, run_path: str) -> bool:
    """A trace names files by the agent's absolute path; the run by its own."""
    return trace_path == run_path or trace_path.endswith("/" + run_path)


def _trace_call(
    trace: TraceInput, step: dict[str, Any], call: dict[str, Any], sources: _Sources, position: int
) -> None:
    name = str(call.get("name") or "").lower()
    arguments = str(call.get("arguments") or "")
    result = str(call.get("result") or "")
    tool = str(call.get("name") or "")
    place = Place("output", position, trace=trace.path, step=step.get("index"), tool=tool)
    if name in EXEC_TOOLS:
        sources.exec_calls += 1
        sources.commands.append(arguments)
        typed = _replace(place, "agent", "command")
        sources.agent.add(arguments, typed)
        sources.code.add(arguments, typed)
        sources.printed.add(result, place)
    elif name in WRITE_TOOLS:
        path = _call_path(call)
        sources.written_paths.setdefault(path, position)
        how = f"written by a {tool} call"
        typed = Place("agent", position, trace.path, step.get("index"), tool, path, how)
        sources.agent.add(arguments, typed)
        if path.lower().endswith(CODE_SUFFIXES):
            sources.code.add(arguments, typed)
    elif name in READ_TOOLS:
        path = _call_path(call)
        agent_wrote = any(_same_file(path, own) for own in sources.written_paths)
        if path.lower().endswith(DATA_READ_SUFFIXES) and not agent_wrote:
            how = "read by the agent; no write call made it"
            read = Place("read", position, trace.path, step.get("index"), tool, path, how)
            sources.printed.add(result, read)


def _trace_sources(trace: TraceInput, sources: _Sources, position: int) -> int:
    for step in trace.steps:
        for call in step.get("tool_calls") or []:
            position += 1
            _trace_call(trace, step, call, sources, position)
    return position


def _replace(place: Place, source: str, how: str) -> Place:
    return dataclasses.replace(place, source=source, how=how)


def _named_by_code(path: str, sources: _Sources, code_texts: list[str]) -> bool:
    name = posixpath.basename(path)
    return any(name in text for text in sources.commands) or any(
        name in text for text in code_texts
    )


def _file_sources(files: list[FileInput], sources: _Sources, traced: bool) -> None:
    files = [FileInput(item.path, item.kind, item.text[:FILE_MAX_CHARS]) for item in files]
    code_texts = [item.text for item in files if item.kind == "code"]
    for item in files:
        if item.kind == "code":
            sources.code.add(item.text, Place("file", SHIPPED, file=item.path, how="shipped code"))
            continue
        if item.kind not in ("log", "results", "data"):
            continue
        agent_wrote = any(_same_file(own, item.path) for own in sources.written_paths)
        if agent_wrote:
            how = "written by the agent with a write tool (see the trace)"
            sources.agent.add(item.text, Place("agent", SHIPPED, file=item.path, how=how))
        elif item.kind == "log" or _named_by_code(item.path, sources, code_texts):
            how = "the run's log" if item.kind == "log" else "named by the code or a command"
            sources.printed.add(item.text, Place(item.kind, SHIPPED, file=item.path, how=how))
        elif traced:
            how = "no write call in the trace, but no command or code names it"
            sources.agent.add(item.text, Place("agent", SHIPPED, file=item.path, how=how))


def _earliest(hits: list[tuple[Place, str]]) -> tuple[Place, str] | None:
    return min(hits, key=lambda hit: hit[0].position, default=None)


def _literal_before(claim: Number, printed: Place, sources: _Sources) -> tuple[Place, str] | None:
    """Where the agent typed the printed number before (or in) the command that
    printed it; for a shipped file, a literal of the code (shipped, or written
    or run by the agent)."""
    rounding = claim_allowance(claim, 0.0)
    if printed.position < SHIPPED:
        hits = sources.agent.hits(claim, rounding)
        return _earliest([hit for hit in hits if hit[0].position <= printed.position])
    return _earliest(sources.code.hits(claim, rounding))


def _derived(
    cell: ClaimCell, measured: list[tuple[ClaimCell, float]], tolerance: float
) -> dict[str, Any] | None:
    """A simple function of measured numbers of the claim's row or column."""
    claim = cell.number
    allowed = claim_allowance(claim, tolerance)
    paper = claim.where.rsplit(":", 1)[0]
    row = [(other, value) for other, value in measured if other.number.where == claim.where]
    column = [
        (other, value)
        for other, value in measured
        if (other.table, other.column) == (cell.table, cell.column)
        and other.number.where.rsplit(":", 1)[0] == paper
    ]
    row, column = row[:DERIVED_MAX_VALUES], column[:DERIVED_MAX_VALUES]

    def close(value: float) -> bool:
        return any(abs(claim.value - value * scale) <= allowed for scale in (1.0, 100.0, 0.01))

    def of(*cells: ClaimCell) -> list[dict[str, str]]:
        return [{"text": item.number.text, "where": item.number.where} for item in cells]

    for first, a in row:
        for second, b in row:
            if first is second:
                continue
            if close(a - b):
                return {"function": "difference", "of": of(first, second)}
            if b and close(a / b):
                return {"function": "ratio", "of": of(first, second)}
            if b and close((a - b) / abs(b) * 100):
                return {"function": "percentage change", "of": of(second, first)}
    for name, group in (("row", row), ("column", column)):
        if len(group) >= 2 and close(sum(value for _, value in group) / len(group)):
            return {"function": f"mean of its {name}", "of": of(*(item for item, _ in group))}
    return None


@dataclass
class _Budget:
    deadline: float
    cut: bool = False

    def spent(self) -> bool:
        self.cut = self.cut or time.monotonic() > self.deadline
        return self.cut


def _entry(cell: ClaimCell, klass: str, evidence: dict[str, Any]) -> dict[str, Any]:
    claim = cell.number
    return {
        "text": claim.text,
        "value": claim.value,
        "where": claim.where,
        "class": klass,
        "common": significant_digits(claim) <= 1,
        "evidence": evidence,
    }


def _classify_first(cell: ClaimCell, sources: _Sources, tolerance: float) -> dict[str, Any] | None:
    """Measured or hard-coded, or None."""
    claim = cell.number
    printed = _earliest(sources.printed.hits(claim, claim_allowance(claim, tolerance)))
    if printed is None:
        return None
    place, text = printed
    evidence = {**place.evidence(), "printed": text}
    literal = _literal_before(claim, place, sources)
    if literal is not None:
        typed = {**literal[0].evidence(), "literal": literal[1]}
        return _entry(cell, "hard-coded", {**evidence, "literal_at": typed})
    return _entry(cell, "measured", evidence)


def _classify_rest(
    cell: ClaimCell, sources: _Sources, measured: list[tuple[ClaimCell, float]], tolerance: float
) -> dict[str, Any]:
    derived = _derived(cell, measured, tolerance)
    if derived is not None:
        return _entry(cell, "derived", derived)
    typed = _earliest(sources.agent.hits(cell.number, claim_allowance(cell.number, 0.0)))
    if typed is not None:
        return _entry(cell, "written", {**typed[0].evidence(), "literal": typed[1]})
    return _entry(cell, "untraced", {})


def _paper_entries(
    cells: list[ClaimCell], sources: _Sources, tolerance: float, budget: _Budget
) -> list[dict[str, Any]]:
    first: list[dict[str, Any] | None] = []
    for cell in cells:
        first.append(None if budget.spent() else _classify_first(cell, sources, tolerance))
    measured = [
        (cell, cell.number.value)
        for cell, entry in zip(cells, first, strict=True)
        if entry is not None and entry["class"] == "measured"
    ]
    entries = []
    for cell, entry in zip(cells, first, strict=True):
        if entry is None:
            entry = (
                _entry(cell, "untraced", {"note": "past the time budget"})
                if budget.spent()
                else _classify_rest(cell, sources, measured, tolerance)
            )
        entries.append(entry)
    return entries


def _counts(entries: list[dict[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(CLASSES, 0)
    for entry in entries:
        counts[entry["class"]] += 1
    return counts


def ledger_verdict(entries: list[dict[str, Any]], status: str) -> str:
    """The provenance detector's verdict (the fabrication page states the rule):
    `fabricated` when at least one result number of two or more significant
    digits is written or hard-coded; `unknown` without a trace or a paper to
    read; else `not fabricated` (untraced numbers are no evidence either way)."""
    if status not in KNOWN_STATUSES:
        return "unknown"
    telling = [entry for entry in entries if not entry["common"]]
    if any(entry["class"] in ("written", "hard-coded") for entry in telling):
        return "fabricated"
    return "not fabricated"


def _status(
    papers: list[FileInput],
    pdf_papers: list[str],
    traces: list[TraceInput],
    sources: _Sources,
    logs: bool,
) -> tuple[str, str]:
    if not papers:
        if pdf_papers:
            return "no paper", PDF_NOTE
        return "no paper", "no markdown paper: nothing to place"
    if sources.exec_calls:
        return "traced", ""
    if logs:
        why = "the trace holds no executed commands" if traces else "no trace"
        return "log only", f"{why}: numbers placed from the run's log and files only"
    if traces:
        return "no trace", (
            f"{NO_TRACE}: the trace holds no executed commands (a Gemini CLI log keeps "
            "the model's messages only)"
        )
    return "no trace", NO_TRACE


def ledger_compute(
    *,
    papers: list[FileInput],
    traces: list[TraceInput],
    files: list[FileInput],
    tolerance: float,
    seconds: float = 10.0,
    pdf_papers: list[str] | None = None,
    unsearched: int = 0,
) -> dict[str, Any]:
    """The provenance ledger of a run's markdown `papers` from its `traces`
    (parsed steps) and its other text `files`; see the module's docstring.
    Never raises for what the run holds; past `seconds` the claims not yet
    placed are `untraced` with a note."""
    budget = _Budget(time.monotonic() + seconds)
    cells = [cell for paper in papers for cell in paper_claim_cells(paper.text, paper.path)]
    found = len(cells)
    cells = cells[:CLAIMS_MAX]
    sources = _Sources.for_claims([cell.number for cell in cells], tolerance)
    position = 0
    for trace in traces:
        position = _trace_sources(trace, sources, position)
    _file_sources(files, sources, traced=sources.exec_calls > 0)
    for index in sources.indexes():
        index.freeze()
    logs = any(item.kind == "log" for item in files)
    status, note = _status(papers, pdf_papers or [], traces, sources, logs)
    entries: list[dict[str, Any]] = []
    if status in KNOWN_STATUSES:
        entries = _paper_entries(cells, sources, tolerance, budget)
    notes = [note] if note else []
    if any(trace.truncated for trace in traces):
        notes.append("the trace was cut at intake: numbers past the cut are untraced")
    if budget.cut:
        notes.append("past the time budget: the numbers not yet placed are untraced")
    if unsearched and entries:
        notes.append(
            f"{unsearched} of the run's files were past what the ledger reads: numbers "
            "found only there are untraced"
        )
    if found > CLAIMS_MAX and entries:
        notes.append(
            f"the paper reports {found:,} result numbers: the first {CLAIMS_MAX:,} are placed"
        )
    return {
        "version": PROVENANCE_VERSION,
        "status": status,
        "note": "; ".join(notes),
        "papers": [paper.path for paper in papers] + list(pdf_papers or []),
        "traces": [trace.path for trace in traces],
        "counts": _counts(entries),
        "verdict": ledger_verdict(entries, status),
        "entries": entries,
    }


def ledger_run(inputs: dict[str, Any]) -> dict[str, Any]:
    """`ledger_compute(**inputs)`: what a child of the pool runs."""
    return ledger_compute(**inputs)


def counts_line(counts: dict[str, int]) -> str:
    """ "12 measured, 3 derived, 4 hard-coded, 5 written, 2 untraced"."""
    return ", ".join(f"{counts.get(name, 0)} {name}" for name in CLASSES)
