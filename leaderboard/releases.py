"""Releases: frozen, citable leaderboards.

`release_create` writes, in one transaction, every stage's leaderboard (the
API's answer, every column), the judges' leaderboards, the finished
judgments the boards rest on, the released human reviews, the task set, the
rubric versions, the judges and their models, the price table's version and
the site's version into one canonical JSON (sorted keys, no spaces, UTF-8),
its SHA-256 and the export zip made from it. The API serves those stored
bytes, so a release reads the same forever, whatever is imported later. A
release can be withdrawn (marked, with a reason), never changed.

Format 2 stores each judgment as what the frozen boards rest on: its
submission, judge, kind, rubric version, condition, prompt hash, verdict,
cost, its score per dimension, and a SHA-256 of its texts (strengths,
weaknesses, hallucination details and assessment, findings, the
justification of each score; `judgment_content_sha256`) instead of the texts
themselves, which made a release of the full benchmark hundreds of megabytes.
Format 1 (before) stored the texts and one row per score; releases made in it
are still served as stored, and `releases_diff` reads both.

Format 3 adds the release's files (`leaderboard.release_files`: each table as
Parquet, a dataset card and Croissant metadata), stored beside the JSON and
listed in it with their SHA-256 (`files`), so the release's hash covers them.
"""

import datetime as dt
import hashlib
import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from benchmark.models import Task
from common.cache_generation import fresh_reads
from common.csv_cells import csv_text
from common.errors import Conflict, NotFound, ValidationFailed
from judging.models import (
    DimensionScore,
    HallucinationFinding,
    Judge,
    Judgment,
    JudgmentStatus,
    Rubric,
)
from judging.selectors import panels_list
from reviews.selectors import released_review_export
from submissions.ledger import ledgers_release_tables
from submissions.models import Submission
from submissions.prices import PRICE_TABLE_VERSION

from .exports import TASK_FIELDS, json_default, zip_stream
from .models import Release, ReleaseFile, release_name_validator
from .payloads import judge_board_payload, leaderboard_payload, objective_payload
from .release_files import release_files_make
from .selectors.board import LeaderboardQuery
from .selectors.counting import LEADERBOARD_STAGES
from .tables import leaderboard_table

# 3: with its files (Parquet, card, Croissant); 2: judgments as scores and a content
# hash (see the docstring); 1: with their texts.
RELEASE_FORMAT = 3


def site_version() -> str:
    try:
        return version("mlrbench-site")
    except PackageNotFoundError:  # a checkout run without installing
        return "unknown"


def canonical_json(data: Any) -> bytes:
    """One spelling of a JSON value: sorted keys, no spaces, UTF-8."""
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=json_default
    ).encode("utf-8")


def _table(queryset, fields) -> dict[str, list]:
    return {"header": list(fields), "rows": [list(row) for row in queryset.values_list(*fields)]}


RELEASE_SUBMISSION_FIELDS = ("id", "agent", "task", "stage", "version")
RELEASE_JUDGMENT_FIELDS = (
    "id",
    "submission_id",
    "judge",
    "kind",
    "rubric_version",
    "condition",
    "prompt_sha256",
    "has_hallucination",
    "confidence",
    "cost_usd",
    "imported",
    "finished_at",
    "scores",
    "content_sha256",
)


# The judgment columns read from the database, in RELEASE_JUDGMENT_FIELDS's order
# (less the scores and the hash), and its texts, which only the hash keeps.
JUDGMENT_TABLE_COLUMNS = (
    "id",
    "submission_id",
    "judge__name",
    "kind",
    "rubric__version",
    "condition",
    "prompt_sha256",
    "has_hallucination",
    "confidence",
    "cost_usd",
    "imported",
    "finished_at",
)
JUDGMENT_TEXT_COLUMNS = ("strengths", "weaknesses", "hallucination_details", "overall_assessment")


def judgment_content_sha256(texts: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a judgment's texts: `{"strengths",
    "weaknesses", "hallucination_details", "overall_assessment", "findings":
    [[type, description, evidence], ...], "justifications": {dimension: text}}`;
    anyone holding the texts (`GET /api/judgments/`, the export) can check them
    against a release."""
    return hashlib.sha256(canonical_json(texts)).hexdigest()


def _released_judgments(judgments: QuerySet[Judgment]) -> dict[str, Any]:
    """The judgments as a table of what the boards rest on; three queries."""
    scores: dict[int, dict[str, float]] = defaultdict(dict)
    justifications: dict[int, dict[str, str]] = defaultdict(dict)
    for judgment_id, dimension, score, justification in (
        DimensionScore.objects.filter(judgment__in=judgments)
        .order_by()
        .values_list("judgment_id", "dimension", "score", "justification")
    ):
        scores[judgment_id][dimension] = float(score)
        justifications[judgment_id][dimension] = justification
    findings: dict[int, list[list[str]]] = defaultdict(list)
    for judgment_id, kind, description, evidence in (
        HallucinationFinding.objects.filter(judgment__in=judgments)
        .order_by("judgment_id", "position")
        .values_list("judgment_id", "type", "description", "evidence")
    ):
        findings[judgment_id].append([kind, description, evidence])
    split = len(JUDGMENT_TABLE_COLUMNS)
    rows = []
    for row in judgments.values_list(*JUDGMENT_TABLE_COLUMNS, *JUDGMENT_TEXT_COLUMNS):
        pk = row[0]
        texts = dict(zip(JUDGMENT_TEXT_COLUMNS, row[split:], strict=True))
        texts["findings"] = findings.get(pk, [])
        texts["justifications"] = justifications.get(pk, {})
        rows.append([*row[:split], scores.get(pk, {}), judgment_content_sha256(texts)])
    return {"header": list(RELEASE_JUDGMENT_FIELDS), "rows": rows}


def release_content(*, name: str, notes: str, created_at: dt.datetime) -> dict[str, Any]:
    """Everything a release freezes, as plain JSON data.

    Long because it is one literal of everything a release freezes."""
    judgments = Judgment.objects.filter(
        status=JudgmentStatus.DONE,
        submission__stage__in=LEADERBOARD_STAGES,
        submission__agent__is_system=False,  # never the judges' canaries
    ).order_by("id")
    submissions = Submission.objects.filter(pk__in=judgments.values("submission_id")).order_by("id")
    review_header, review_rows = released_review_export()
    return {
        "format": RELEASE_FORMAT,
        "release": name,
        "notes": notes,
        "created_at": created_at.isoformat(),
        "site_version": site_version(),
        "price_table_version": PRICE_TABLE_VERSION,
        # Each stage's leaderboard as the API answered it at the release.
        "leaderboards": {
            stage: leaderboard_payload(LeaderboardQuery(stage=stage))
            for stage in LEADERBOARD_STAGES
        },
        # Every judge panel's boards too (`?panel=NAME` on the release's API).
        "panels": {
            listing.name: {
                "judges": listing.judges,
                "default_for": listing.default_for,
                "leaderboards": {
                    stage: leaderboard_payload(LeaderboardQuery(stage=stage, panel=listing.name))
                    for stage in LEADERBOARD_STAGES
                },
            }
            for listing in panels_list()
        },
        "objective": objective_payload(),
        "judges_leaderboards": {
            stage: judge_board_payload(stage=stage) for stage in LEADERBOARD_STAGES
        },
        "tasks": _table(Task.objects.order_by("slug"), TASK_FIELDS),
        "rubrics": [
            {
                "stage": r.stage,
                "kind": r.kind,
                "version": r.version,
                "overall_key": r.overall_key,
                "dimensions": r.dimensions,
                "prompt_sha256": hashlib.sha256(r.prompt.encode("utf-8")).hexdigest(),
            }
            for r in Rubric.objects.order_by("stage", "kind", "version")
        ],
        "judges": [
            {"name": j.name, "model": j.model, "model_family": j.model_family}
            for j in Judge.objects.order_by("name")
        ],
        "submissions": {
            "header": list(RELEASE_SUBMISSION_FIELDS),
            "rows": [
                list(row)
                for row in submissions.values_list(
                    "id", "agent__name", "task__slug", "stage", "version"
                )
            ],
        },
        "judgments": _released_judgments(judgments),
        "human_reviews": {"header": review_header, "rows": review_rows},
        # Where each reported number came from (issue 38), for the released submissions.
        "provenance": ledgers_release_tables(submission_ids=submissions.values("id")),
    }


def release_zip(content: bytes, leaderboards: dict[str, Any], *, at: dt.datetime) -> bytes:
    """The release's download: its JSON, its hash and each stage's CSV."""
    digest = hashlib.sha256(content).hexdigest()

    def files() -> Iterator[tuple[str, list[str]]]:
        yield "release.json", [content.decode("utf-8")]
        yield "SHA256SUMS", [f"{digest}  release.json\n"]
        for stage, answer in leaderboards.items():
            header, rows = leaderboard_table(answer)
            yield f"leaderboard-{stage}.csv", [csv_text(header, rows)]

    return b"".join(zip_stream(files(), at=at))


class ReleaseExists(Conflict):
    default_code = "release_exists"


class UnknownRelease(NotFound):
    default_code = "unknown_release"


def release_create(*, name: str, notes: str = "") -> Release:
    """Freeze the site's results now, in one transaction (one snapshot)."""
    try:
        release_name_validator(name)
    except Exception as exc:
        raise ValidationFailed(f"{name!r} is not a release name", field="name") from exc
    created_at = timezone.now().replace(microsecond=0)
    try:
        # The boards as the data is now, never one served while a worker recomputes.
        with transaction.atomic(), fresh_reads():
            if Release.objects.filter(name=name).exists():
                raise ReleaseExists(f"release {name!r} exists; a release never changes")
            data = release_content(name=name, notes=notes, created_at=created_at)
            # The files say what the canonical JSON says, values as it spells them.
            files = release_files_make(
                name=name,
                notes=notes,
                created_at=created_at,
                data=json.loads(canonical_json(data)),
            )
            data["files"] = [file.listing(name) for file in files]
            content = canonical_json(data)
            release = Release.objects.create(
                name=name,
                notes=notes,
                created_at=created_at,
                content=content,
                content_sha256=hashlib.sha256(content).hexdigest(),
                export_zip=release_zip(content, data["leaderboards"], at=created_at),
                site_version=data["site_version"],
            )
            ReleaseFile.objects.bulk_create(
                ReleaseFile(
                    release=release,
                    name=file.name,
                    media_type=file.media_type,
                    content=file.content,
                    sha256=file.sha256,
                    size=len(file.content),
                )
                for file in files
            )
            return release
    except IntegrityError as exc:
        raise ReleaseExists(f"release {name!r} exists; a release never changes") from exc


class AlreadyWithdrawn(Conflict):
    default_code = "release_withdrawn"


def release_withdraw(*, name: str, reason: str) -> Release:
    """Mark a release withdrawn; its data stays as it was, and is still served."""
    if not reason.strip():
        raise ValidationFailed("say why the release is withdrawn", field="reason")
    with transaction.atomic():
        release = Release.objects.select_for_update().filter(name=name).first()
        if release is None:
            raise UnknownRelease(f"no release named {name!r}")
        if release.withdrawn_at is not None:
            raise AlreadyWithdrawn(
                f"release {name!r} was withdrawn on {release.withdrawn_at:%Y-%m-%d}"
            )
        Release.objects.filter(pk=release.pk).update(
            withdrawn_at=timezone.now(), withdrawn_reason=reason.strip()
        )
    release.refresh_from_db()
    return release


# --- reads ---------------------------------------------------------------------------


def release_get(*, name: str) -> Release:
    release = Release.objects.filter(name=name).first()
    if release is None:
        raise UnknownRelease(f"no release named {name!r}")
    return release


class UnknownReleasePanel(NotFound):
    default_code = "unknown_panel"


def release_panel_data(release: Release, *, panel: str) -> dict[str, Any]:
    """The boards a release froze for one judge panel; UnknownReleasePanel when it
    froze none of that name (a release made before the panel, or before panels)."""
    data = release_data(release)
    frozen = data.get("panels", {}).get(panel)
    if frozen is None:
        raise UnknownReleasePanel(
            f"release {release.name!r} froze no judge panel {panel!r}", field="panel"
        )
    return {"release": release.name, "panel": panel, **frozen}


def release_data(release: Release) -> dict[str, Any]:
    return json.loads(bytes(release.content))


def releases_list() -> list[Release]:
    return list(Release.objects.defer("content", "export_zip"))


def release_bibtex(release: Release, *, url: str) -> str:
    key = "mlrbench_" + "".join(c if c.isalnum() else "_" for c in release.name)
    return (
        f"@misc{{{key},\n"
        f"  title = {{MLR-Bench leaderboard, release {release.name}}},\n"
        f"  year = {{{release.created_at:%Y}}},\n"
        f"  month = {{{release.created_at:%b}}},\n"
        f"  howpublished = {{\\url{{{url}}}}},\n"
        f"  note = {{SHA-256 {release.content_sha256}}}\n"
        "}\n"
    )


@dataclass(frozen=True)
class AgentMove:
    stage: str
    agent: str
    rank_before: int | None
    rank_after: int | None
    overall_before: float | None
    overall_after: float | None
    reasons: list[str]

    @property
    def overall_change(self) -> float | None:
        if self.overall_before is None or self.overall_after is None:
            return None
        return self.overall_after - self.overall_before


@dataclass(frozen=True)
class ReleaseDiff:
    a: Release
    b: Release
    moves: list[AgentMove]
    judges_added: list[str]
    judges_removed: list[str]
    tasks_added: int
    tasks_removed: int


def _judgment_counts(data: dict[str, Any]) -> dict[tuple[str, str], int]:
    """{(stage, agent): finished judgments} from a release's judgments table (format
    2: through its submissions table; format 1: the judgment rows name both)."""
    header = data["judgments"]["header"]
    if "submissions" in data:
        columns = data["submissions"]["header"]
        id_at, stage_at, agent_at = (columns.index(c) for c in ("id", "stage", "agent"))
        owner = {row[id_at]: (row[stage_at], row[agent_at]) for row in data["submissions"]["rows"]}
        submission_at = header.index("submission_id")
        keys = [owner[row[submission_at]] for row in data["judgments"]["rows"]]
    else:
        stage_at = header.index("submission__stage")
        agent_at = header.index("submission__agent__name")
        keys = [(row[stage_at], row[agent_at]) for row in data["judgments"]["rows"]]
    counts: dict[tuple[str, str], int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    return counts


def _reasons(
    before: dict | None, after: dict | None, judged: tuple[int, int], new_judges: list[str]
) -> list[str]:
    if before is None:
        return ["new on this board"]
    if after is None:
        return ["no longer on this board"]
    reasons = []
    if before["n_tasks"] != after["n_tasks"]:
        reasons.append(f"tasks {before['n_tasks']} → {after['n_tasks']}")
    if judged[0] != judged[1]:
        reasons.append(f"judgments {judged[0]} → {judged[1]}")
    if new_judges:
        reasons.append("new judge: " + ", ".join(new_judges))
    if not reasons and before["scores"] != after["scores"]:
        reasons.append("scores of the same judgments changed")
    return reasons


def releases_diff(*, a: str, b: str) -> ReleaseDiff:
    """What moved from release `a` to release `b`, and why."""
    release_a, release_b = release_get(name=a), release_get(name=b)
    data_a, data_b = release_data(release_a), release_data(release_b)
    judges_a = {j["name"] for j in data_a["judges"]}
    judges_b = {j["name"] for j in data_b["judges"]}
    new_judges = sorted(judges_b - judges_a)
    counts_a, counts_b = _judgment_counts(data_a), _judgment_counts(data_b)
    moves = []
    for stage in LEADERBOARD_STAGES:
        rows_a = {r["agent"]: r for r in data_a["leaderboards"].get(stage, {}).get("rows", [])}
        rows_b = {r["agent"]: r for r in data_b["leaderboards"].get(stage, {}).get("rows", [])}
        first: dict[str, Any] = next(
            iter(data_b["leaderboards"].get(stage, {}).get("dimensions", [])), {}
        )
        key = first.get("key", "Overall")
        for agent in sorted(set(rows_a) | set(rows_b)):
            before, after = rows_a.get(agent), rows_b.get(agent)
            move = AgentMove(
                stage=stage,
                agent=agent,
                rank_before=before["rank"] if before else None,
                rank_after=after["rank"] if after else None,
                overall_before=before["scores"].get(key) if before else None,
                overall_after=after["scores"].get(key) if after else None,
                reasons=_reasons(
                    before,
                    after,
                    (counts_a.get((stage, agent), 0), counts_b.get((stage, agent), 0)),
                    new_judges,
                ),
            )
            if before != after:
                moves.append(move)
    tasks_a = {row[0] for row in data_a["tasks"]["rows"]}
    tasks_b = {row[0] for row in data_b["tasks"]["rows"]}
    return ReleaseDiff(
        a=release_a,
        b=release_b,
        moves=moves,
        judges_added=new_judges,
        judges_removed=sorted(judges_a - judges_b),
        tasks_added=len(tasks_b - tasks_a),
        tasks_removed=len(tasks_a - tasks_b),
    )


def release_file_get(*, name: str, file: str) -> ReleaseFile:
    release = release_get(name=name)
    stored = ReleaseFile.objects.filter(release=release, name=file).first()
    if stored is None:
        raise UnknownRelease(f"release {name!r} has no file {file!r}")
    return stored


def release_files(release: Release) -> list[ReleaseFile]:
    return list(release.files.defer("content"))
