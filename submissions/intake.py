"""Submission intake: every write that turns an uploaded run into a submission
with its artifacts.

An intake is all or nothing. The run is unpacked into a scratch folder of
its own on the local disk (never the artifact store), checked (limits, names,
the stage's needs), written to the store under a staging prefix, and only then
are the rows written and the staged objects moved to `submissions/<id>/`, the
move being the transaction's last step. A refused or failed intake, the store
going down included, leaves no rows and no object a reader can reach; staged
leftovers of a crash go with `manage.py storage_sweep`.
"""

import logging
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.models import Q

from benchmark.models import Agent, Task
from common.errors import Conflict, ValidationFailed
from common.hooks import setting_callables
from common.results import results_changed
from common.storage import (
    StorageUnavailable,
    empty_folders_remove,
    object_save,
    objects_delete,
    objects_each,
    objects_move,
    prefix_delete,
    staging_prefix_new,
    storage_errors,
)

from .archives import (
    ArchiveRefused,
    IntakeLimits,
    UnpackedFile,
    archive_format,
    archive_unpack,
    file_sha256,
    files_digest,
    markdown_unpack,
)
from .costs import (
    TOKEN_TRACKER_NAME,
    step_json,
    steps_cost,
    steps_priced_total,
    token_tracker_cost,
    trace_summary,
)
from .derived import (
    DocumentFile,
    derived_artifacts_store,
    derived_bytes,
    documents_derive,
    is_document,
    sources_derive,
    traces_derive,
)
from .ledger import provenance_derive
from .lineage import BASED_ON_FILE, LineageRefused, based_on_file_read, stage_inputs_resolve
from .models import Artifact, ArtifactKind, Stage, Submission, SubmissionInput, SubmissionStatus
from .pdf_text import (
    PdfRefused,
    PdfText,
    derived_path,
    derived_text_record,
    is_pdf_path,
    pdf_text_extract,
)
from .run_layout import artifact_kind, run_root, stage_check
from .signals import submission_ready

logger = logging.getLogger(__name__)

SUBMISSIONS_FOLDER = "submissions"


class IntakeRefused(ValidationFailed):
    """The upload is refused; the message tells the user what is wrong (in the
    `archive` field unless another is named)."""

    default_code = "archive_refused"

    def __init__(self, message: str, *, code: str | None = None, field: str = "archive"):
        super().__init__(message, code=code, field=field)


class DuplicateSubmission(Conflict):
    """The same run (the same archive, or the same files however packed) was
    already submitted for this agent, task and stage; the answer carries the
    existing submission's `id`."""

    default_code = "duplicate_submission"

    def __init__(self, submission: Submission):
        self.submission = submission
        super().__init__(
            f"this run (the same files) was already submitted as submission {submission.pk} "
            f"(version {submission.version})",
            field="archive",
            extra={"id": submission.pk},
        )


@dataclass(frozen=True)
class RunFiles:
    """A checked run on disk, waiting to become a submission."""

    folder: Path
    files: list[UnpackedFile]
    digest: str

    @property
    def content_digest(self) -> str:
        """The run's identity: its files' sorted paths and hashes, the same
        however the run was packed (zip or tar.gz, wrapped in a folder or not)."""
        return files_digest(self.files)


def incoming_folder() -> Path:
    """A fresh local scratch folder for one intake (removed by the caller)."""
    return Path(tempfile.mkdtemp(prefix="mlrbench-intake-"))


def submission_intake(
    *,
    agent: Agent,
    task: Task,
    stage: str,
    archive: Path,
    archive_name: str,
    uploader: User | None,
    source: str,
    archive_sha256: str | None = None,
    limits: IntakeLimits | None = None,
    based_on: Sequence[int] | None = None,
) -> Submission:
    """Create a submission from an uploaded archive (or a single markdown file
    for the idea and proposal stages).

    Raises IntakeRefused with a message for the user, or DuplicateSubmission
    when the same archive was already submitted. `archive_sha256` may come
    from the upload handler, which hashed the upload while receiving it.
    `based_on` names the submissions (ids) this one was built on, checked
    against what `uploader` may see (see `submissions.lineage`); the archive may
    name them in `based_on.json` instead.

    Long because the intake's checks run in the order a user reads their
    refusals, before anything is written."""
    if stage not in Stage.values:
        raise IntakeRefused(f"unknown stage {stage!r}", code="invalid_choice", field="stage")
    # Checked before the archive is unpacked: a wrong id costs nothing.
    inputs = (
        stage_inputs_resolve(task=task, stage=stage, ids=based_on, user=uploader)
        if based_on
        else []
    )
    limits = limits or IntakeLimits.from_settings()
    # The format first: a file that is not an upload of this stage is refused
    # as such, even when the very same bytes were once accepted.
    is_archive = archive_format(archive) is not None
    is_markdown = stage in (Stage.IDEA, Stage.PROPOSAL) and archive_name.lower().endswith(".md")
    if not is_archive and not is_markdown:
        also = " or a markdown file" if stage in (Stage.IDEA, Stage.PROPOSAL) else ""
        raise IntakeRefused(
            f"the file is not a zip or tar.gz archive{also}", code=ArchiveRefused.default_code
        )
    sha256 = archive_sha256 or file_sha256(archive)
    existing = Submission.objects.filter(
        agent=agent, task=task, stage=stage, archive_sha256=sha256
    ).first()
    if existing is not None:
        raise DuplicateSubmission(existing)

    staging = incoming_folder()
    try:
        unpacked = staging / "run"
        unpacked.mkdir()
        try:
            if is_archive:
                files = archive_unpack(source=archive, dest=unpacked, limits=limits)
            else:
                files = markdown_unpack(
                    source=archive, dest=unpacked, name=f"{stage}.md", limits=limits
                )
            run = _run_files(unpacked, files, digest=sha256)
            same_content = _same_run(agent, task, stage, run)
            if same_content is not None:
                raise DuplicateSubmission(same_content)
            problem = stage_check(stage, (artifact_kind(item.path) for item in run.files))
            problem = problem or _intake_checks_problem(task=task, stage=stage, run=run)
            if problem:
                raise ArchiveRefused(problem)
        except ArchiveRefused as exc:
            raise IntakeRefused(exc.message, code=exc.code) from None
        inputs = _archive_inputs(task=task, stage=stage, run=run, uploader=uploader, given=inputs)
        return submission_store(
            agent=agent,
            task=task,
            stage=stage,
            uploader=uploader,
            source=source,
            run=run,
            notify=True,
            based_on=inputs,
        )
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _archive_inputs(
    *, task: Task, stage: str, run: RunFiles, uploader: User | None, given: list[Submission]
) -> list[Submission]:
    """The inputs the run's `based_on.json` names, or those given with the
    upload; both at once must name the same submissions in the same order."""
    if not any(item.path == BASED_ON_FILE for item in run.files):
        return given
    ids = based_on_file_read(run.folder / BASED_ON_FILE)
    if given and ids != [submission.pk for submission in given]:
        raise LineageRefused(
            f"based_on ({', '.join(str(s.pk) for s in given)}) and the archive's "
            f"{BASED_ON_FILE} ({', '.join(str(pk) for pk in ids) or 'empty'}) differ; "
            "give the inputs once"
        )
    if given:
        return given
    try:
        return stage_inputs_resolve(task=task, stage=stage, ids=ids, user=uploader)
    except LineageRefused as exc:
        raise LineageRefused(f"{BASED_ON_FILE}: {exc.message}", code=exc.code) from None


def _same_run(agent: Agent, task: Task, stage: str, run: RunFiles) -> Submission | None:
    return (
        Submission.objects.filter(agent=agent, task=task, stage=stage)
        .filter(Q(archive_sha256=run.digest) | Q(content_sha256=run.content_digest))
        .order_by("version")
        .first()
    )


def _latest_version(agent: Agent, task: Task, stage: str, run: RunFiles) -> int | None:
    """The newest version of the agent's submissions for the task and stage (None:
    none yet), read with what `_same_run` looks for in one query; raises
    DuplicateSubmission for the same run."""
    rows = Submission.objects.filter(agent=agent, task=task, stage=stage).values_list(
        "pk", "version", "archive_sha256", "content_sha256"
    )
    latest = None
    same: tuple[int, int] | None = None
    content_digest = run.content_digest
    for pk, version, archive_sha256, content_sha256 in rows:
        latest = version if latest is None else max(latest, version)
        matches = archive_sha256 == run.digest or content_sha256 == content_digest
        if matches and (same is None or version < same[0]):
            same = (version, pk)
    if same is not None:
        raise DuplicateSubmission(Submission.objects.get(pk=same[1]))
    return latest


def _intake_checks_problem(*, task: Task, stage: str, run: RunFiles) -> str | None:
    """What another app's check finds wrong with the run (`SUBMISSION_INTAKE_CHECKS`,
    named by dotted path so that `benchmark` never imports them): each is
    `check(*, task, stage, folder, paths) -> str | None`."""
    paths = [item.path for item in run.files]
    for check in setting_callables("SUBMISSION_INTAKE_CHECKS"):
        problem = check(task=task, stage=stage, folder=run.folder, paths=paths)
        if problem:
            return problem
    return None


def _run_files(unpacked: Path, files: list[UnpackedFile], *, digest: str) -> RunFiles:
    """Drop the folder that wraps the whole run, if any."""
    prefix = run_root(item.path for item in files)
    if not prefix:
        return RunFiles(folder=unpacked, files=files, digest=digest)
    folder = unpacked / prefix.rstrip("/")
    stripped = [
        UnpackedFile(path=item.path.removeprefix(prefix), size=item.size, sha256=item.sha256)
        for item in files
    ]
    return RunFiles(folder=folder, files=stripped, digest=digest)


@dataclass(frozen=True)
class _Costs:
    llm_cost_usd: Decimal | None
    llm_unpriced_steps: int
    llm_steps: list[dict[str, object]]
    agent_cost_usd: Decimal | None
    agent_duration_seconds: float | None


def _run_costs(run: RunFiles, agent: Agent) -> _Costs:
    usage = [
        (item.path, run.folder / item.path)
        for item in run.files
        if artifact_kind(item.path) == ArtifactKind.TOKEN_USAGE
    ]
    steps = steps_cost(usage, default_model=agent.base_model)
    llm, unpriced = steps_priced_total(steps)
    if llm is None and any(item.path == TOKEN_TRACKER_NAME for item in run.files):
        llm = token_tracker_cost(run.folder / TOKEN_TRACKER_NAME)
    traces = sorted(
        item.path for item in run.files if artifact_kind(item.path) == ArtifactKind.TRACE
    )
    agent_cost = duration = None
    if traces:
        summary = trace_summary(run.folder / traces[0])
        agent_cost, duration = summary.cost_usd, summary.duration_seconds
    return _Costs(llm, unpriced, [step_json(step) for step in steps], agent_cost, duration)


def _pdf_papers(run: RunFiles) -> list[str]:
    return [
        item.path
        for item in run.files
        if is_pdf_path(item.path) and artifact_kind(item.path) == ArtifactKind.PAPER
    ]


def _pdf_papers_read(run: RunFiles, *, deadline: float) -> dict[str, PdfText]:
    """The text of every PDF paper of the run, read once, before any row is written,
    within what is left of the upload's budget: a PDF that cannot be read (in
    time) refuses the whole intake, with its name and why."""
    texts: dict[str, PdfText] = {}
    for path in _pdf_papers(run):
        left = min(settings.PDF_TEXT_SECONDS, deadline - time.monotonic())
        try:
            texts[path] = pdf_text_extract(run.folder / path, name=path, timeout=left)
        except PdfRefused as exc:
            raise IntakeRefused(str(exc), code="pdf_refused") from None
    return texts


def _work_counts_check(files: list[DocumentFile], run: RunFiles) -> None:
    """At most `INTAKE_MAX_PDFS` PDF papers and `INTAKE_MAX_DOCUMENTS` markdown
    documents an upload: checked before any of them is read."""
    pdfs = len(_pdf_papers(run))
    if pdfs > settings.INTAKE_MAX_PDFS:
        raise IntakeRefused(
            f"the upload has {pdfs} PDF papers; at most {settings.INTAKE_MAX_PDFS} are read",
            code="too_many_pdfs",
        )
    documents = sum(is_document(item.path, item.kind) for item in files)
    if documents > settings.INTAKE_MAX_DOCUMENTS:
        raise IntakeRefused(
            f"the upload has {documents} markdown documents; at most "
            f"{settings.INTAKE_MAX_DOCUMENTS} are rendered",
            code="too_many_documents",
        )


def submission_store(
    *,
    agent: Agent,
    task: Task,
    stage: str,
    uploader: User | None,
    source: str,
    run: RunFiles,
    notify: bool,
    based_on: Sequence[Submission] = (),
) -> Submission:
    """Write the rows of a checked run and move its folder into the store,
    with the submissions it was `based_on` (checked inputs), in order.

    The agent's row is locked so two uploads for one agent get consecutive
    versions; the unique constraint on the archive digest settles a race
    between two uploads of the same archive.

    Long because one transaction writes the submission, its inputs, artifacts and derived rows and
    moves its files, and one handler undoes all of it."""
    costs = _run_costs(run, agent)
    # Untrusted documents are rendered here, once, outside the transaction.
    files = [
        DocumentFile(
            path=item.path,
            kind=artifact_kind(item.path),
            sha256=item.sha256,
            size=item.size,
            location=run.folder / item.path,
        )
        for item in run.files
    ]
    # All of the upload's untrusted work shares one budget (INTAKE_WORK_SECONDS).
    _work_counts_check(files, run)
    deadline = time.monotonic() + settings.INTAKE_WORK_SECONDS
    derived = documents_derive(files, deadline=deadline)
    traces = traces_derive(files, deadline=deadline)
    provenance = provenance_derive(
        files, traces, deadline=deadline, digest=run.content_digest, based_on=based_on
    )
    pdf_texts = _pdf_papers_read(run, deadline=deadline)
    sources = sources_derive(files, deadline=deadline, used_bytes=derived_bytes(derived, traces))
    staged = _run_stage(run, pdf_texts)
    written: list[str] = []
    try:
        with transaction.atomic():
            if connection.features.has_select_for_update:  # SQLite locks the whole file
                Agent.objects.select_for_update().filter(pk=agent.pk).first()
            latest = _latest_version(agent, task, stage, run)
            submission = Submission.objects.create(
                agent=agent,
                task=task,
                stage=stage,
                version=(latest or 0) + 1,
                uploader=uploader,
                source=source,
                archive_sha256=run.digest,
                content_sha256=run.content_digest,
                status=SubmissionStatus.READY,
                llm_cost_usd=costs.llm_cost_usd,
                llm_unpriced_steps=costs.llm_unpriced_steps,
                llm_steps=costs.llm_steps,
                agent_cost_usd=costs.agent_cost_usd,
                agent_duration_seconds=costs.agent_duration_seconds,
            )
            SubmissionInput.objects.bulk_create(
                SubmissionInput(submission=submission, based_on=item, position=position)
                for position, item in enumerate(based_on)
            )
            base = f"{SUBMISSIONS_FOLDER}/{submission.pk}"
            artifacts = Artifact.objects.bulk_create(
                Artifact(
                    submission=submission,
                    kind=artifact_kind(item.path),
                    path=item.path,
                    size=item.size,
                    sha256=item.sha256,
                    file=f"{base}/{item.path}",
                )
                for item in run.files
            )
            derived_artifacts_store(
                artifacts=artifacts, derived=(derived, traces, sources, provenance)
            )
            for artifact in artifacts:
                if artifact.path in pdf_texts:
                    if artifact.pk is None:  # a backend that returns no ids from a bulk insert
                        artifact = Artifact.objects.get(submission=submission, path=artifact.path)
                    derived_text_record(artifact=artifact, extracted=pdf_texts[artifact.path])
            # Last, so that the objects reach their final names only with rows
            # that are about to commit (and are removed again if they do not).
            written = _staged_move(staged, run, submission.pk, pdf_texts)
            # A new run on its stage's board (on commit; once at an import's end).
            results_changed([stage])
            if notify:
                transaction.on_commit(
                    lambda: submission_ready.send(sender=Submission, submission_id=submission.pk)
                )
    except IntegrityError:
        _intake_undo(staged, written)
        existing = _same_run(agent, task, stage, run)
        if existing is not None:
            raise DuplicateSubmission(existing) from None
        raise
    except BaseException:
        _intake_undo(staged, written)
        raise
    return submission


def _run_stage(run: RunFiles, pdf_texts: dict[str, PdfText]) -> str:
    """Write the run's files and PDF texts under a fresh staging prefix."""
    staged = staging_prefix_new()
    uploads: list[tuple[str, Path | bytes]] = [
        (f"{staged}/run/{item.path}", run.folder / item.path) for item in run.files
    ]
    uploads += [
        (f"{staged}/derived/{path}.txt", extracted.text.encode("utf-8"))
        for path, extracted in pdf_texts.items()
    ]
    try:
        # Concurrently: to an object store each object is a round trip.
        _done, error = objects_each(_upload, uploads)
        if error is not None:
            raise error
    except storage_errors() as exc:
        logger.warning("the artifact store refused a staged upload: %s", exc)
        prefix_delete(staged)
        raise StorageUnavailable() from None
    return staged


def _upload(item: tuple[str, Path | bytes]) -> None:
    name, content = item
    if isinstance(content, bytes):
        object_save(name, content)
        return
    with content.open("rb") as handle:
        object_save(name, handle)


def _staged_move(
    staged: str, run: RunFiles, submission_id: int, pdf_texts: dict[str, PdfText]
) -> list[str]:
    moves = [
        (f"{staged}/run/{item.path}", f"{SUBMISSIONS_FOLDER}/{submission_id}/{item.path}")
        for item in run.files
    ]
    moves += [
        (f"{staged}/derived/{path}.txt", derived_path(submission_id, path)) for path in pdf_texts
    ]
    written: list[str] = []
    try:
        objects_move(moves, written=written)
    except storage_errors() as exc:
        logger.warning("the artifact store failed while moving an upload in place: %s", exc)
        _intake_undo(staged, written)
        raise StorageUnavailable() from None
    empty_folders_remove(staged)
    return written


def _intake_undo(staged: str, written: list[str]) -> None:
    """Best effort: what the store cannot remove now is either staged (the
    sweep's) or under a submission id that was rolled back (never reused)."""
    try:
        objects_delete(written)
    except storage_errors():
        logger.warning("could not remove %d moved objects", len(written), exc_info=True)
    written.clear()
    prefix_delete(staged)
