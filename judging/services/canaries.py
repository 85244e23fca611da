"""Canaries: real submissions copied under the system agent, each twin with one
fabrication planted at a known place (`judging.canaries`), each source with one
unchanged control, so that the judges' hallucination reviews can be scored
against a ground truth of any size (`judging.canary_selectors`).

The copies share the source's stored files (nothing on the site deletes an
artifact's object with its row); only the altered document is written anew,
under the canary's own folder. No LLM is called here: judging them is
`canaries_queue`, through the normal queue.
"""

from __future__ import annotations

import hashlib
import logging
import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import transaction
from django.db.models import Avg, Max

from benchmark.models import Agent, Team
from common.errors import ValidationFailed
from common.results import results_changed
from common.storage import object_save, objects_delete, storage_errors
from submissions.models import (
    Artifact,
    ArtifactKind,
    DerivedArtifact,
    Stage,
    Submission,
    SubmissionSource,
    SubmissionStatus,
)
from submissions.pdf_text import is_pdf_path

from .. import canaries
from ..canaries import NothingToAlter, Plant
from ..models import Canary, CanaryRole, HallucinationType, Judge, Judgment, JudgmentKind
from ..prompts import PromptError, artifact_text, judge_prompt_build, output_kind
from .queue import QueueReport, judgments_queue
from .rubrics import rubric_current

logger = logging.getLogger(__name__)

CANARY_STAGES: tuple[str, ...] = (Stage.EXPERIMENT, Stage.PAPER, Stage.END2END)
CANARY_AGENT = "system-canaries"
CANARY_TEAM = "system"
CANARY_FOLDER = "canaries"
# What a document or log is read up to, for planting and for the checks.
READ_LIMIT = 2_000_000
# Output tokens assumed for a judge with no hallucination review yet, for the estimate.
DEFAULT_OUTPUT_TOKENS = 1500
KINDS: tuple[str, ...] = tuple(HallucinationType.values)


class CanaryInputInvalid(ValidationFailed):
    pass


@dataclass
class CanaryReport:
    sources: list[int] = field(default_factory=list)
    created: list[int] = field(default_factory=list)  # canary ids
    existing: int = 0
    skipped: list[str] = field(default_factory=list)  # "submission N, kind: why"


def canary_agent() -> Agent:
    """The system agent that owns every canary (made on first use)."""
    team, _ = Team.objects.get_or_create(slug=CANARY_TEAM, defaults={"name": "MLR-Bench site"})
    agent, _ = Agent.objects.get_or_create(
        name=CANARY_AGENT,
        defaults={
            "team": team,
            "display_name": "Planted-fabrication canaries (system)",
            "is_system": True,
        },
    )
    if not agent.is_system:
        raise CanaryInputInvalid(f"an agent named {CANARY_AGENT!r} exists and is not the site's")
    return agent


def kinds_parse(raw: str | Iterable[str] | None) -> tuple[str, ...]:
    if raw is None:
        return KINDS
    names = [k.strip() for k in (raw.split(",") if isinstance(raw, str) else raw) if k.strip()]
    unknown = sorted(set(names) - set(KINDS))
    if unknown or not names:
        raise CanaryInputInvalid(
            f"unknown kind {', '.join(unknown) or '(none)'}; choose from {', '.join(KINDS)}",
            field="kinds",
        )
    return tuple(dict.fromkeys(names))


def _rank(seed: int, submission_id: int) -> str:
    # Each submission's place in the seeded order depends on it alone, so new
    # submissions elsewhere do not reshuffle the ones already chosen.
    return hashlib.sha256(f"{seed}:{submission_id}".encode()).hexdigest()


def canary_sources(*, stage: str, count: int, seed: int) -> list[Submission]:
    """`count` ready public submissions of the stage, a seeded choice."""
    ids = Submission.objects.public().filter(stage=stage, status=SubmissionStatus.READY)
    chosen = sorted(ids.values_list("pk", flat=True), key=lambda pk: _rank(seed, pk))[:count]
    return list(Submission.objects.filter(pk__in=chosen).select_related("task").order_by("pk"))


class PaperCorpus:
    """Every public paper's text on the site, lower-cased, read once: a made-up
    citation must match none of them."""

    def __init__(self) -> None:
        self._texts: list[str] | None = None

    def _load(self) -> list[str]:
        texts = []
        papers = Artifact.objects.filter(
            submission__in=Submission.objects.public(),
            kind__in=[ArtifactKind.PAPER, ArtifactKind.RELATED_WORK],
        )
        for artifact in papers.only("path", "file", "size").iterator():
            text = _text(artifact)
            if text:
                texts.append(text.lower())
        return texts

    def __contains__(self, needle: str) -> bool:
        if self._texts is None:
            self._texts = self._load()
        lowered = needle.lower()
        return any(lowered in text for text in self._texts)


def _text(artifact: Artifact) -> str | None:
    try:
        return artifact_text(artifact, limit=READ_LIMIT)
    except storage_errors():
        return None


@dataclass
class _Source:
    submission: Submission
    artifacts: list[Artifact]

    def documents(self) -> list[Artifact]:
        """The output under review that a plant may alter (text, not PDF)."""
        kind = output_kind(self.submission.stage)
        return [a for a in self.artifacts if a.kind == kind and not is_pdf_path(a.path)]

    def run_text(self, *, leave_out: str) -> str:
        """The code, logs and results files (not the altered document), lower-cased."""
        kinds = {ArtifactKind.CODE, ArtifactKind.LOG, ArtifactKind.TRACE, ArtifactKind.RESULTS}
        kinds |= {ArtifactKind.DATA}
        texts = [_text(a) or "" for a in self.artifacts if a.kind in kinds and a.path != leave_out]
        return "\n".join(texts)


def _plant(kind: str, text: str, *, rng: random.Random, run_text: str, corpus: PaperCorpus):
    if kind == HallucinationType.FAKED_EXPERIMENTAL_RESULTS:
        return canaries.plant_faked_results(text, rng=rng, evidence=[run_text])
    if kind == HallucinationType.NONEXISTENT_CITATIONS:
        return canaries.plant_citation(text, rng=rng, known=corpus.__contains__)
    if kind == HallucinationType.HALLUCINATED_METHODOLOGY:
        return canaries.plant_methodology(text, rng=rng, run_text=run_text)
    return canaries.plant_math_error(text, rng=rng)


def _plant_in(source: _Source, kind: str, seed: int, corpus: PaperCorpus) -> tuple[Artifact, Plant]:
    """The first document of the output (in path order) a plant of `kind` fits."""
    documents = source.documents()
    if not documents:
        raise NothingToAlter("the output under review has no text document (a PDF only?)")
    reasons = []
    for document in documents:
        text = _text(document)
        if not text:
            reasons.append(f"{document.path} could not be read as text")
            continue
        # Seeded for repeatability, not secrecy.
        rng = random.Random(f"{seed}:{source.submission.pk}:{kind}:{document.path}")  # noqa: S311
        try:
            plant = _plant(
                kind,
                text,
                rng=rng,
                run_text=source.run_text(leave_out=document.path),
                corpus=corpus,
            )
        except NothingToAlter as exc:
            reasons.append(f"{document.path}: {exc}")
            continue
        return document, plant
    raise NothingToAlter("; ".join(reasons))


def _copy_submission(source: Submission, agent: Agent, key: str) -> Submission:
    digest = hashlib.sha256(f"canary:{key}".encode()).hexdigest()
    Agent.objects.select_for_update().filter(pk=agent.pk).first()
    latest = Submission.objects.filter(agent=agent, task=source.task, stage=source.stage).aggregate(
        Max("version")
    )["version__max"]
    return Submission.objects.create(
        agent=agent,
        task=source.task,
        stage=source.stage,
        version=(latest or 0) + 1,
        source=SubmissionSource.IMPORT,
        archive_sha256=digest,
        content_sha256=digest,
        status=SubmissionStatus.READY,
    )


def _copy_artifacts(
    source: _Source, copy: Submission, altered: tuple[Artifact, str, bytes] | None
) -> None:
    """The source's artifacts and derived rows on the copy, pointing at the same
    stored objects, but for the altered document (`altered`: artifact, new name, bytes)."""
    rows = []
    for artifact in source.artifacts:
        row = Artifact(
            submission=copy,
            kind=artifact.kind,
            path=artifact.path,
            size=artifact.size,
            sha256=artifact.sha256,
            file=artifact.file.name,
        )
        if altered is not None and artifact.pk == altered[0].pk:
            row.file, row.size = altered[1], len(altered[2])
            row.sha256 = hashlib.sha256(altered[2]).hexdigest()
        rows.append(row)
    made = {row.path: row for row in Artifact.objects.bulk_create(rows)}
    by_id = {a.pk: made[a.path] for a in source.artifacts}
    derived = DerivedArtifact.objects.filter(artifact__in=source.artifacts)
    if altered is not None:
        derived = derived.exclude(artifact_id=altered[0].pk)
    DerivedArtifact.objects.bulk_create(
        DerivedArtifact(
            artifact=by_id[d.artifact_id],
            kind=d.kind,
            file=d.file.name,
            size=d.size,
            pages=d.pages,
            truncated=d.truncated,
            source_sha256=d.source_sha256,
            version=d.version,
            content=d.content,
            note=d.note,
        )
        # The altered document's page shows its text; its HTML is derived on first view.
        for d in derived
    )


def _twin_create(
    source: _Source, agent: Agent, kind: str, seed: int, document: Artifact, plant: Plant
) -> Canary:
    data = plant.text.encode("utf-8")
    key = f"{source.submission.pk}:{kind}:{seed}"
    # A fresh folder each time: a leftover of a canary deleted since never blocks it.
    name = f"{CANARY_FOLDER}/{uuid.uuid4().hex}/{document.path}"
    object_save(name, data)
    try:
        with transaction.atomic():
            twin = _copy_submission(source.submission, agent, key)
            _copy_artifacts(source, twin, (document, name, data))
            return Canary.objects.create(
                submission=twin,
                source=source.submission,
                role=CanaryRole.TWIN,
                kind=kind,
                seed=seed,
                path=document.path,
                start=plant.start,
                end=plant.end,
                original=plant.original,
                planted=plant.planted,
                markers=plant.markers,
                description=plant.description,
            )
    except BaseException:
        objects_delete([name])
        raise


def _control_create(source: _Source, agent: Agent, seed: int) -> Canary:
    with transaction.atomic():
        control = _copy_submission(
            source.submission, agent, f"{source.submission.pk}:control:{seed}"
        )
        _copy_artifacts(source, control, None)
        return Canary.objects.create(
            submission=control, source=source.submission, role=CanaryRole.CONTROL, seed=seed
        )


def canaries_create(
    *, stage: str, count: int = 10, seed: int = 0, kinds: Iterable[str] | None = None
) -> CanaryReport:
    """For `count` seeded-chosen submissions of `stage`: a twin per kind with one
    planted fabrication, and one unchanged control. What exists for the same seed
    is left as it is; a kind with nothing to alter is skipped with the reason."""
    if stage not in CANARY_STAGES:
        raise CanaryInputInvalid(
            f"stage must be one of {', '.join(CANARY_STAGES)}", field="stage", code="invalid_choice"
        )
    if count < 1:
        raise CanaryInputInvalid("count must be at least 1", field="count")
    chosen_kinds = kinds_parse(kinds) if kinds is not None else KINDS
    agent = canary_agent()
    corpus = PaperCorpus()
    report = CanaryReport()
    sources = canary_sources(stage=stage, count=count, seed=seed)
    done = set(
        Canary.objects.filter(source__in=sources, seed=seed).values_list(
            "source_id", "role", "kind"
        )
    )
    artifacts: dict[int, list[Artifact]] = {}
    for artifact in Artifact.objects.filter(submission__in=sources).order_by("path"):
        artifacts.setdefault(artifact.submission_id, []).append(artifact)
    for submission in sources:
        report.sources.append(submission.pk)
        source = _Source(submission, artifacts.get(submission.pk, []))
        for kind in chosen_kinds:
            if (submission.pk, CanaryRole.TWIN, kind) in done:
                report.existing += 1
                continue
            try:
                document, plant = _plant_in(source, kind, seed, corpus)
            except NothingToAlter as exc:
                report.skipped.append(f"submission {submission.pk}, {kind}: {exc}")
                continue
            report.created.append(_twin_create(source, agent, kind, seed, document, plant).pk)
        if (submission.pk, CanaryRole.CONTROL, "") in done:
            report.existing += 1
        else:
            report.created.append(_control_create(source, agent, seed).pk)
    if report.created:
        results_changed([stage])  # the judges' board's canary columns
    return report


# --- running them ------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeEstimate:
    judge: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal | None  # None: the judge's model has no known price


def canary_submissions() -> list[Submission]:
    return list(
        Submission.objects.filter(canary__isnull=False).select_related("task").order_by("pk")
    )


def _price(judge: Judge, input_tokens: int, output_tokens: int) -> Decimal | None:
    from common.llm import litellm_table_cost
    from common.prices import tokens_price

    return tokens_price(
        model=judge.model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        own_price=judge.own_price,
        litellm=lambda: litellm_table_cost(judge.model, input_tokens, output_tokens),
    ).cost_usd


def canaries_estimate(*, judges: list[Judge]) -> list[JudgeEstimate]:
    """Per judge, the hallucination reviews of the canaries not done yet, and what
    they cost at its price: the prompt's tokens (about 4 characters a token) and its
    mean output on its earlier hallucination reviews (else `DEFAULT_OUTPUT_TOKENS`)."""
    submissions = canary_submissions()
    prompt_chars: dict[int, int] = {}
    for submission in submissions:
        rubric = rubric_current(stage=submission.stage, kind=JudgmentKind.HALLUCINATION)
        if rubric is None:
            continue
        try:
            prompt = judge_prompt_build(submission=submission, rubric=rubric, condition="with_code")
        except PromptError:
            continue
        prompt_chars[submission.pk] = sum(len(str(m["content"])) for m in prompt.messages)
    estimates = []
    for judge in judges:
        done = set(
            Judgment.objects.filter(
                judge=judge,
                kind=JudgmentKind.HALLUCINATION,
                submission_id__in=list(prompt_chars),
                condition="with_code",
                # What the queue leaves alone: only new and failed reviews are sent.
                status__in=["done", "queued", "running"],
            ).values_list("submission_id", flat=True)
        )
        todo = [pk for pk in prompt_chars if pk not in done]
        mean_output = Judgment.objects.filter(
            judge=judge, kind=JudgmentKind.HALLUCINATION, output_tokens__isnull=False
        ).aggregate(mean=Avg("output_tokens"))["mean"]
        input_tokens = sum(prompt_chars[pk] for pk in todo) // 4
        output_tokens = round(mean_output or DEFAULT_OUTPUT_TOKENS) * len(todo)
        estimates.append(
            JudgeEstimate(
                judge=judge.name,
                calls=len(todo),
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cost_usd=_price(judge, input_tokens, output_tokens) if todo else Decimal(0),
            )
        )
    return estimates


def canaries_queue(*, judges: list[Judge]) -> QueueReport:
    """Queue the hallucination review of every twin and control for `judges`."""
    return judgments_queue(
        submissions=canary_submissions(), judges=judges, kinds=[JudgmentKind.HALLUCINATION]
    )
