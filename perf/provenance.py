"""The provenance ledger's cost (issue 38), beside parsing the trace alone.

On the sample's largest trace (`agent_results/end2end_gemini/.../claude_output.json`,
Claude Code, about 320 KB) with its run's paper, logs, results and code: the
ledger's time (`submissions.provenance.ledger_compute`, best of `--repeat`) and the
ratio to `trace_parse` of the same trace. Then a doubling series: the trace's
steps repeated 1, 2, 4, 8 times (the paper's claims the same), ledger time per
size and the ratio from one size to the next: linear is 2x per doubling,
quadratic 4x.

Goals: the sample's largest ledger under 1 s; at most 3x per doubling.

    MLRBENCH_DATA=../shared/mlrbench .venv/bin/python perf/provenance.py

No database: the trace is priced with the shipped price table. `--smoke` runs
sizes 1 and 2 once each, prints the same lines and fails only if the script breaks;
the full mode exits non-zero when a goal is missed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
os.environ.setdefault("SECRET_KEY", "perf-only-secret-key")

import django  # noqa: E402

django.setup()

from submissions import costs as costs_module  # noqa: E402
from submissions import traces as traces_module  # noqa: E402
from submissions.costs import SHIPPED_PRICES  # noqa: E402
from submissions.provenance import FileInput, TraceInput, ledger_compute  # noqa: E402
from submissions.run_layout import artifact_kind  # noqa: E402

# The shipped prices only: no database is read.
# (traces.py imports price_table from costs when it prices, so the patch is there).
costs_module.price_table = lambda: SHIPPED_PRICES

RUN = "agent_results/end2end_gemini/iclr2025_bi_align"
TRACE = "claude_output.json"
SEARCHED = (".json", ".csv", ".txt", ".log", ".md", ".py", ".sh")


def _run_files(folder: Path) -> tuple[list[FileInput], list[FileInput]]:
    papers, files = [], []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = str(path.relative_to(folder))
        kind = str(artifact_kind(relative))
        if relative == TRACE or path.suffix not in SEARCHED:
            continue
        text = path.read_text(errors="replace")
        if kind == "paper":
            papers.append(FileInput(relative, kind, text))
        elif kind in ("log", "results", "data", "code"):
            files.append(FileInput(relative, kind, text))
    return papers, files


def _best(function, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    repeat = 1 if options.smoke else options.repeat
    data = Path(os.environ.get("MLRBENCH_DATA", ROOT.parent / "shared" / "mlrbench"))
    folder = data / RUN
    trace_path = folder / TRACE
    raw = trace_path.read_bytes()
    parsed: dict = {}

    def parse() -> None:
        parsed.update(traces_module.trace_parse(lambda: raw, reader="json", size=len(raw)))

    parse_seconds = _best(parse, repeat)
    papers, files = _run_files(folder)
    steps = parsed["steps"]

    def ledger(copies: int, with_files: bool = True) -> dict:
        trace = TraceInput(TRACE, steps * copies)
        return ledger_compute(
            papers=papers,
            traces=[trace],
            files=files if with_files else [],
            tolerance=0.01,
            seconds=600,
        )

    result = ledger(1)
    ledger_seconds = _best(lambda: ledger(1), repeat)
    trace_only = _best(lambda: ledger(1, with_files=False), repeat)
    print(f"sample's largest trace: {trace_path.relative_to(data)} ({len(raw) / 1024:.0f} KiB)")
    print(f"  parsing the trace alone (trace_parse)     {parse_seconds:7.3f} s  1.00x")
    print(
        f"  ledger, the trace only                    {trace_only:7.3f} s  "
        f"{trace_only / parse_seconds:.2f}x"
    )
    print(
        f"  ledger, the trace and the run's files     {ledger_seconds:7.3f} s  "
        f"{ledger_seconds / parse_seconds:.2f}x  ({result['status']}, "
        f"{len(result['entries'])} numbers)"
    )
    sizes = (1, 2) if options.smoke else (1, 2, 4, 8)
    times = [
        _best(lambda copies=copies: ledger(copies, with_files=False), repeat) for copies in sizes
    ]
    print("doubling series (the trace's steps repeated; its ledger, the trace only):")
    worst = 0.0
    for index, (copies, seconds) in enumerate(zip(sizes, times, strict=True)):
        ratio = seconds / times[index - 1] if index else 1.0
        worst = max(worst, ratio)
        print(f"  x{copies:<3} {len(steps) * copies:6} steps  {seconds:7.3f} s  {ratio:.2f}x")
    goals = [
        (ledger_seconds < 1.0, f"the sample's largest ledger under 1 s ({ledger_seconds:.3f} s)"),
        (worst <= 3.0, f"at most 3x per doubling (worst {worst:.2f}x)"),
    ]
    for met, text in goals:
        print(f"goal {'met' if met else 'MISSED'}: {text}")
    if not options.smoke and not all(met for met, _ in goals):
        sys.exit(1)


if __name__ == "__main__":
    main()
