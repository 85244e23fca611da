"""The `reviews` part of `import_mlrbench` (order 30, after the agent runs):
every published MLR-Judge review becomes a `done`, imported judgment of the
submission it reviews.

Where the reviews are, in a clone of the MLR-Bench repository:

    agent_reviews/idea_proposal_reviews_<judge>/<task>/{idea,proposal}/<stage>_<model>.json
    agent_reviews/subset_reviews_<judge>/<task>/review_<agent>.json            end2end
    agent_reviews/subset_reviews_<judge>/<task>/review_<agent>_no_code.json    end2end, no code
    agent_reviews/subset_reviews_<judge>/<task>/experiments/<coding-agent>.json  experiment
    agent_reviews/subset_reviews_<judge>/<task>/paper/<model>.json             paper

The submission is matched by agent name, task slug and stage (its newest
version), as the runs part names them; a review with no such submission, or a
file in no known place, is reported as a problem, never guessed. The judge is
the folder suffix (`gemini-2.5-pro-preview-03-25` and `gemini-2.5-pro-preview`
are one judge). Judges created here are inactive: they are never queued for new
submissions unless an organiser activates them (`judges enable NAME`).
The judgments point at a rubric version holding the official MLR-Judge prompt
of the stage (from `rubrics/`, inactive, so new judgments keep the site's).

AI Scientist v2's runs carry their reviews beside the paper:

    ai_scientist_v2_papers/<base-model>/<task>/review_<judge>.json                end2end
    ai_scientist_v2_papers/<base-model>/<task>/review_hallucination_<judge>.json  hallucination

(`gemini-2.5-pro-preview-05-06` there is the same judge as `gemini-2.5-pro-preview`.)
MLR-Agent's own run folders carry hallucination reviews the same way:

    agent_results/end2end_<agent>/<task>/review_hallucination_<judge>.json                 end2end
    agent_results/experiments_and_writeups/<coding-agent>/<task>/review_hallucination_<judge>.json
                                                                                         experiment

A hallucination review becomes a judgment of kind `hallucination` under the
official hallucination rubric, with one finding per listed hallucination. An
experiment review's yes/no verdict is kept as a finding without a type.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from django.db import IntegrityError, transaction
from django.utils import timezone

from benchmark.mlrbench_import import ImportOptions, ImportPartReport
from benchmark.models import ModelFamily
from submissions.models import Stage, Submission

from .models import (
    DimensionScore,
    HallucinationFinding,
    Judge,
    JudgingCondition,
    Judgment,
    JudgmentKind,
    JudgmentStatus,
    Rubric,
)
from .parsing import ParsedHallucinationReview, ParsedReview, ReviewFormatError
from .rubrics import OFFICIAL_HALLUCINATION_RUBRIC_FILE, OFFICIAL_RUBRIC_FILES
from .services.panels import panel_published_ensure
from .services.rubrics import ensure_default_rubrics, rubric_current, rubric_import
from .services.run import answer_parse, judgment_details_write, judgment_outcome_fields

# Published folder suffixes that name the same judge.
JUDGE_ALIASES = {
    "gemini-2.5-pro-preview-03-25": "gemini-2.5-pro-preview",
    "gemini-2.5-pro-preview-05-06": "gemini-2.5-pro-preview",
}
AI_SCIENTIST_AGENT = "ai-scientist-v2"
# The panel of the published judges, every stage's default after an import.
PUBLISHED_PANEL = "mlr-judge"
AI_SCIENTIST_FOLDER = "ai_scientist_v2_papers"

# How the published judges are called through litellm, should an organiser
# activate them (they are created inactive).
KNOWN_JUDGES = {
    "claude-3-7-sonnet-20250219": {
        "model": "anthropic/claude-3-7-sonnet-20250219",
        "model_family": ModelFamily.ANTHROPIC,
        "api_key_env": "ANTHROPIC_API_KEY",
    },
    "gemini-2.5-pro-preview": {
        "model": "gemini/gemini-2.5-pro-preview-03-25",
        "model_family": ModelFamily.GOOGLE,
        "api_key_env": "GEMINI_API_KEY",
    },
}

_FAMILY_PREFIXES = (
    ("claude", ModelFamily.ANTHROPIC),
    ("gemini", ModelFamily.GOOGLE),
    ("gpt", ModelFamily.OPENAI),
    ("o1", ModelFamily.OPENAI),
    ("o3", ModelFamily.OPENAI),
    ("o4", ModelFamily.OPENAI),
    ("deepseek", ModelFamily.DEEPSEEK),
    ("qwen", ModelFamily.QWEN),
    ("mistral", ModelFamily.MISTRAL),
    ("ministral", ModelFamily.MISTRAL),
    ("llama", ModelFamily.META),
)

_IDEA_PROPOSAL = re.compile(
    r"^idea_proposal_reviews_(?P<judge>[^/]+)/(?P<task>[^/]+)/(?P<stage>idea|proposal)/"
    r"(?P=stage)_(?P<agent>[^/]+)\.json$"
)
_END2END = re.compile(
    r"^subset_reviews_(?P<judge>[^/]+)/(?P<task>[^/]+)/review_(?P<agent>[^/]+?)"
    r"(?P<no_code>_no_code)?\.json$"
)
_EXPERIMENT = re.compile(
    r"^subset_reviews_(?P<judge>[^/]+)/(?P<task>[^/]+)/experiments/(?P<agent>[^/]+)\.json$"
)
_PAPER = re.compile(
    r"^subset_reviews_(?P<judge>[^/]+)/(?P<task>[^/]+)/paper/(?P<agent>[^/]+)\.json$"
)


@dataclass(frozen=True)
class ReviewFile:
    path: Path
    relative: str
    judge: str
    task: str
    stage: str
    agent: str
    condition: str
    kind: str = JudgmentKind.SCORE


def judge_name_canonical(folder_suffix: str) -> str:
    return JUDGE_ALIASES.get(folder_suffix, folder_suffix)


def review_file_locate(relative: str, path: Path) -> ReviewFile | None:
    """What a file under agent_reviews/ reviews, or None when it is in no known place."""
    if match := _IDEA_PROPOSAL.match(relative):
        stage, condition = match["stage"], JudgingCondition.WITH_CODE
    elif match := _EXPERIMENT.match(relative):
        stage, condition = Stage.EXPERIMENT, JudgingCondition.WITH_CODE
    elif match := _PAPER.match(relative):
        stage, condition = Stage.PAPER, JudgingCondition.WITH_CODE
    elif match := _END2END.match(relative):
        stage = Stage.END2END
        condition = JudgingCondition.NO_CODE if match["no_code"] else JudgingCondition.WITH_CODE
    else:
        return None
    return ReviewFile(
        path=path,
        relative=f"agent_reviews/{relative}",
        judge=judge_name_canonical(match["judge"]),
        task=match["task"],
        stage=str(stage),
        agent=match["agent"],
        condition=str(condition),
    )


def _family_of(name: str) -> str:
    for prefix, family in _FAMILY_PREFIXES:
        if name.lower().startswith(prefix):
            return family
    return ModelFamily.OTHER


def _judge_for(name: str, report: ImportPartReport, cache: dict[str, Judge]) -> Judge:
    if name not in cache:
        defaults = KNOWN_JUDGES.get(name) or {"model": name, "model_family": _family_of(name)}
        judge, created = Judge.objects.get_or_create(
            name=name, defaults={**defaults, "is_active": False}
        )
        if created:
            report.add("judges created")
        cache[name] = judge
    return cache[name]


def _rubric_for(
    stage: str, root: Path, cache: dict[tuple[str, str], Rubric], kind: str = JudgmentKind.SCORE
) -> Rubric:
    if (stage, kind) not in cache:
        file = (
            OFFICIAL_HALLUCINATION_RUBRIC_FILE
            if kind == JudgmentKind.HALLUCINATION
            else OFFICIAL_RUBRIC_FILES[stage]
        )
        official = root / file
        rubric = None
        if official.is_file():
            rubric, _created = rubric_import(
                stage=stage,
                prompt=official.read_text(encoding="utf-8"),
                source=f"MLR-Judge official prompt ({file})",
                activate=False,
                kind=kind,
            )
        if rubric is None:
            ensure_default_rubrics()
            rubric = rubric_current(stage=stage, kind=kind) or Rubric.objects.filter(
                stage=stage, kind=kind
            ).latest("version")
        cache[(stage, kind)] = rubric
    return cache[(stage, kind)]


def _write(
    *,
    judgment: Judgment | None,
    key: dict,
    parsed: ParsedReview | ParsedHallucinationReview,
    raw: str,
) -> tuple[Judgment, str]:
    fields = {
        "status": JudgmentStatus.DONE,
        "imported": True,
        **judgment_outcome_fields(parsed),
        "raw_response": raw,
        "error": "",
        "finished_at": timezone.now(),
    }
    if judgment is None:
        judgment = Judgment.objects.create(**key, **fields)
        outcome = "created"
    else:
        for name, value in fields.items():
            setattr(judgment, name, value)
        judgment.save()
        DimensionScore.objects.filter(judgment=judgment).delete()
        HallucinationFinding.objects.filter(judgment=judgment).delete()
        outcome = "updated"
    judgment_details_write(judgment_id=judgment.pk, parsed=parsed)
    return judgment, outcome


_AI_SCIENTIST_REVIEW = re.compile(
    r"^(?P<model>[^/]+)/(?P<task>[^/]+)/review_(?P<hallucination>hallucination_)?"
    r"(?P<judge>[^/]+)\.json$"
)


def ai_scientist_review_locate(relative: str, path: Path) -> ReviewFile | None:
    """What a review file beside an AI Scientist v2 paper reviews, or None for the
    run's own files."""
    match = _AI_SCIENTIST_REVIEW.match(relative)
    if match is None:
        return None
    return ReviewFile(
        path=path,
        relative=f"{AI_SCIENTIST_FOLDER}/{relative}",
        judge=judge_name_canonical(match["judge"]),
        task=match["task"],
        stage=str(Stage.END2END),
        agent=AI_SCIENTIST_AGENT,
        condition=str(JudgingCondition.WITH_CODE),
        kind=str(JudgmentKind.HALLUCINATION if match["hallucination"] else JudgmentKind.SCORE),
    )


_RUN_HALLUCINATION_REVIEW = re.compile(
    r"^(?:end2end_(?P<agent>[^/]+)|experiments_and_writeups/(?P<coding_agent>[^/]+))/"
    r"(?P<task>[^/]+)/review_hallucination_(?P<judge>[^/]+)\.json$"
)


def run_hallucination_review_locate(relative: str, path: Path) -> ReviewFile | None:
    """What a hallucination review in an MLR-Agent run folder (relative to
    `agent_results/`) reviews, or None for any other file."""
    match = _RUN_HALLUCINATION_REVIEW.match(relative)
    if match is None:
        return None
    end2end = match["agent"] is not None
    return ReviewFile(
        path=path,
        relative=f"agent_results/{relative}",
        judge=judge_name_canonical(match["judge"]),
        task=match["task"],
        stage=str(Stage.END2END if end2end else Stage.EXPERIMENT),
        agent=match["agent"] if end2end else match["coding_agent"],
        condition=str(JudgingCondition.WITH_CODE),
        kind=str(JudgmentKind.HALLUCINATION),
    )


def _run_folder_reviews(root: Path) -> list[ReviewFile]:
    """The hallucination reviews beside the runs: AI Scientist v2's and MLR-Agent's."""
    found: list[ReviewFile] = []
    papers = root / AI_SCIENTIST_FOLDER
    if papers.is_dir():
        for file in sorted(papers.glob("*/*/review_*.json")):
            review = ai_scientist_review_locate(file.relative_to(papers).as_posix(), file)
            if review is not None:
                found.append(review)
    results = root / "agent_results"
    patterns = (
        "end2end_*/*/review_hallucination_*.json",
        "experiments_and_writeups/*/*/review_hallucination_*.json",
    )
    for pattern in patterns if results.is_dir() else ():
        for file in sorted(results.glob(pattern)):
            review = run_hallucination_review_locate(file.relative_to(results).as_posix(), file)
            if review is not None and file.is_file():
                found.append(review)
    return found


def _review_files(root: Path, report: ImportPartReport) -> list[ReviewFile]:
    """Every review file of the clone, located; files in no known place are problems."""
    found: list[ReviewFile] = []
    folder = root / "agent_reviews"
    if folder.is_dir():
        for file in sorted(p for p in folder.rglob("*") if p.is_file()):
            relative = file.relative_to(folder).as_posix()
            review = review_file_locate(relative, file)
            if review is None:
                report.problems.append(f"agent_reviews/{relative}: not in a known review folder")
            else:
                found.append(review)
    else:
        report.problems.append("agent_reviews/: no such folder, no judge review imported")
    return found + _run_folder_reviews(root)


def _latest_submissions() -> dict[tuple[str, str, str], int]:
    """The newest version's id of every (agent, task, stage), in one query."""
    latest: dict[tuple[str, str, str], tuple[int, int]] = {}
    rows = Submission.objects.values_list("pk", "agent__name", "task__slug", "stage", "version")
    for pk, agent, task, stage, version in rows.iterator():
        key = (agent, task, stage)
        if key not in latest or version > latest[key][1]:
            latest[key] = (pk, version)
    return {key: pk for key, (pk, _version) in latest.items()}


def _imported_digests() -> set[tuple[int, str, int, str, str]]:
    """(submission, judge, rubric, condition, digest of the file) of every
    imported judgment: a review file already stored is skipped unread."""
    rows = Judgment.objects.filter(imported=True).values_list(
        "submission_id", "judge__name", "rubric_id", "condition", "raw_response"
    )
    return {
        (submission, judge, rubric, condition, _digest(raw))
        for submission, judge, rubric, condition, raw in rows.iterator()
    }


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8", errors="surrogatepass")).hexdigest()


def _judgment_store(
    *, key: dict, kind: str, parsed: ParsedReview | ParsedHallucinationReview, raw: str, new: bool
) -> str:
    """Write one review's judgment; returns what was done, as the report counts it.
    `new`: no judgment had the key when the part began (one made since, by a
    judge run, is caught by the unique constraint and handled as existing)."""
    if new:
        try:
            with transaction.atomic():
                _write(judgment=None, key={**key, "kind": kind}, parsed=parsed, raw=raw)
            return "judgments created"
        except IntegrityError:
            pass
    with transaction.atomic():
        existing = Judgment.objects.select_for_update().filter(**key).first()
        if existing is not None and not existing.imported:
            return "kept (judged on this site)"
        if existing is not None and existing.raw_response == raw:
            return "unchanged"
        _judgment, outcome = _write(
            judgment=existing, key={**key, "kind": kind}, parsed=parsed, raw=raw
        )
        return f"judgments {outcome}"


def reviews_part(path: Path, options: ImportOptions) -> ImportPartReport:
    """Long because it is one pass over the review files, each outcome reported."""
    report = ImportPartReport()
    judges: dict[str, Judge] = {}
    rubrics: dict[tuple[str, str], Rubric] = {}
    reviews = _review_files(Path(path), report)
    latest = _latest_submissions()
    stored = _imported_digests()
    # Every judgment's key, read once: a review with none is created without a
    # lookup of its own (the first import's thousands).
    judged = set(
        Judgment.objects.values_list("submission_id", "judge_id", "rubric_id", "condition")
    )
    for number, review in enumerate(reviews, 1):
        options.progress(f"reviews: {number}/{len(reviews)}")
        file = review.path
        submission_id = latest.get((review.agent, review.task, review.stage))
        if submission_id is None:
            report.problems.append(
                f"{review.relative}: no {review.stage} submission of agent {review.agent!r} for "
                f"task {review.task!r} (import the agent runs first)"
            )
            continue
        try:
            raw = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            report.problems.append(f"{review.relative}: not a JSON file ({exc})")
            continue
        rubric = _rubric_for(review.stage, Path(path), rubrics, review.kind)
        if (submission_id, review.judge, rubric.pk, review.condition, _digest(raw)) in stored:
            report.add("unchanged")
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            report.problems.append(f"{review.relative}: not a JSON file ({exc})")
            continue
        if not isinstance(data, dict):
            report.problems.append(f"{review.relative}: not a JSON object")
            continue
        try:
            parsed = answer_parse(data, rubric=rubric)
        except ReviewFormatError as exc:
            report.problems.append(f"{review.relative}: {exc}")
            continue
        judge = _judge_for(review.judge, report, judges)
        key = {
            "submission_id": submission_id,
            "judge": judge,
            "rubric": rubric,
            "condition": review.condition,
        }
        known = (submission_id, judge.pk, rubric.pk, review.condition)
        outcome = _judgment_store(
            key=key, kind=rubric.kind, parsed=parsed, raw=raw, new=known not in judged
        )
        judged.add(known)
        report.add(outcome)
    # The published judges as every stage's default panel: a judge added later
    # is in no panel, so the published boards never move (issue 27).
    if panel_published_ensure(name=PUBLISHED_PANEL, judge_names=KNOWN_JUDGES):
        report.add(f"panel {PUBLISHED_PANEL}")
    return report
