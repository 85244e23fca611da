"""The `hallucination check` part of `import_mlrbench` (after the human scores):
`human_eval/Hallucination Check.csv` becomes the experts' hallucination checks of
the end-to-end submissions, one row per paper.

Columns: `LLM,Workshop_name,is_Faked_Experimental_Result,
is_Hallucinated_Methodology,is_Incorrect_Citation,is_Mathematical_Error`, each
`Yes`, `No` or `Not Sure`. `LLM` names the system: `AI Scientist V2` is agent
`ai-scientist-v2`, `MLR Agent` is agent `o4-mini` (MLR-Agent run with o4-mini,
`end2end_o4-mini`: the same base model as AI Scientist v2, and the only
end-to-end runs with typed hallucination reviews beside them);
`--hallucination-agent SYSTEM=AGENT` overrides or adds to that. A row that names
an unknown system, task or paper, or holds an answer that is not one of the
three, is named and skipped, never guessed; a paper's four answers are written
together or not at all.
"""

from __future__ import annotations

import csv
from pathlib import Path

from django.db import transaction

from benchmark.mlrbench_import import ImportOptions, ImportPartReport
from judging.models import HallucinationType
from submissions.models import Stage, Submission

from .models import HallucinationAnswer, HumanHallucinationCheck

CSV_PATH = Path("human_eval") / "Hallucination Check.csv"
DEFAULT_AGENTS = {"AI Scientist V2": "ai-scientist-v2", "MLR Agent": "o4-mini"}
TYPE_COLUMNS = {
    "is_Faked_Experimental_Result": HallucinationType.FAKED_EXPERIMENTAL_RESULTS,
    "is_Hallucinated_Methodology": HallucinationType.HALLUCINATED_METHODOLOGY,
    "is_Incorrect_Citation": HallucinationType.NONEXISTENT_CITATIONS,
    "is_Mathematical_Error": HallucinationType.MATHEMATICAL_ERRORS,
}
ANSWERS = {
    "yes": HallucinationAnswer.YES,
    "no": HallucinationAnswer.NO,
    "not sure": HallucinationAnswer.NOT_SURE,
}


def _answers(row: dict[str, str], line: int) -> tuple[dict[str, str] | None, str]:
    answers: dict[str, str] = {}
    for column, kind in TYPE_COLUMNS.items():
        raw = (row.get(column) or "").strip()
        answer = ANSWERS.get(" ".join(raw.lower().split()))
        if answer is None:
            return None, f"line {line}: {column} is {raw!r}, not Yes, No or Not Sure"
        answers[kind] = answer
    return answers, ""


def _record(submission: Submission, answers: dict[str, str]) -> str:
    """The paper's four imported answers: `created`, `updated` or `unchanged`."""
    with transaction.atomic():
        existing = {
            check.type: check
            for check in HumanHallucinationCheck.objects.select_for_update().filter(
                submission=submission, imported=True
            )
        }
        if existing and {k: c.answer for k, c in existing.items()} == answers:
            return "unchanged"
        for kind, answer in answers.items():
            HumanHallucinationCheck.objects.update_or_create(
                submission=submission, type=kind, imported=True, defaults={"answer": answer}
            )
    return "updated" if existing else "created"


def hallucination_checks_part(path: Path, options: ImportOptions) -> ImportPartReport:
    report = ImportPartReport()
    csv_path = Path(path) / CSV_PATH
    if not csv_path.is_file():
        return report
    agents = {**DEFAULT_AGENTS, **options.hallucination_agents}
    try:
        with csv_path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            header = set(reader.fieldnames or [])
            missing = [c for c in ("LLM", "Workshop_name", *TYPE_COLUMNS) if c not in header]
            if missing:
                report.problems.append(f"{CSV_PATH}: no column {', '.join(missing)}")
                return report
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        report.problems.append(f"{CSV_PATH}: cannot be read ({exc})")
        return report
    named: set[int] = set()  # the papers the file's rows name
    complete = True
    for line, row in enumerate(rows, start=2):
        where = f"{CSV_PATH} line {line}"
        system, task = (row.get("LLM") or "").strip(), (row.get("Workshop_name") or "").strip()
        agent = agents.get(system)
        if agent is None:
            complete = False
            report.problems.append(
                f"{where}: no agent for the system {system!r} (map it with "
                "--hallucination-agent SYSTEM=AGENT)"
            )
            continue
        submission = (
            Submission.objects.filter(agent__name=agent, task__slug=task, stage=Stage.END2END)
            .order_by("-version")
            .first()
        )
        if submission is None:
            complete = False
            report.problems.append(
                f"{where}: no end2end submission of agent {agent!r} for task {task!r}"
            )
            continue
        named.add(submission.pk)
        answers, problem = _answers(row, line)
        if answers is None:
            report.problems.append(f"{CSV_PATH} {problem}")
            continue
        report.add(f"hallucination checks {_record(submission, answers)}")
    if complete:
        _stale_remove(named, report)
    return report


def _stale_remove(named: set[int], report: ImportPartReport) -> None:
    """Imported answers on papers no row names any more (an earlier import filed the
    experts' "MLR Agent" under `claude`): removed, and counted, once every row of
    the file was matched to its paper."""
    stale = HumanHallucinationCheck.objects.filter(
        imported=True, review__isnull=True, submission__stage=Stage.END2END
    ).exclude(submission_id__in=named)
    removed, _ = stale.delete()
    if removed:
        report.add("hallucination checks removed (no longer in the file)", removed)
