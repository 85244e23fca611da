"""A release's tables as files researchers load in one line: each table as
Parquet, a dataset card (`README.md` with the YAML header the Hugging Face Hub
reads: one config per table, the licence, the citation) and Croissant metadata
(`croissant.json`, made and validated with `mlcroissant`).

The files are made from the release's canonical JSON (what `GET
/api/releases/<name>/` serves), so a table says exactly what the JSON says; the
JSON then lists them with their SHA-256 (`files`), so the release's hash covers
them. They sit side by side under `/api/releases/<name>/files/`, and every
reference between them is a relative file name: the folder works as served, as
downloaded, and pushed as is to a dataset hub.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import io
import json
import logging
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from common.errors import ApplicationError

PARQUET_MEDIA_TYPE = "application/vnd.apache.parquet"
CARD_NAME = "README.md"
CROISSANT_NAME = "croissant.json"
MEDIA_TYPES = {".parquet": PARQUET_MEDIA_TYPE, ".md": "text/markdown", ".json": "application/json"}

# What each table is, for the card and the Croissant record sets.
TABLE_DESCRIPTIONS = {
    "tasks": "The benchmark's research tasks (slug, title, topic, ...).",
    "submissions": "The submissions the judged results rest on: agent, task, stage, version.",
    "judgments": "Every finished judgment: judge, kind, rubric version, verdict, cost, and "
    "the SHA-256 of its texts.",
    "judgment_scores": "One row per judgment and rubric dimension: the judge's score.",
    "human_reviews": "The released expert reviews, reviewers numbered.",
    "judges": "The judges and the models they call.",
}


class ReleaseFilesFailed(ApplicationError):
    status_code = 500
    default_code = "release_files_failed"


@dataclass(frozen=True)
class ReleaseFileData:
    name: str
    content: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES.get(Path(self.name).suffix, "application/octet-stream")

    def listing(self, release: str) -> dict[str, Any]:
        return {
            "name": self.name,
            "sha256": self.sha256,
            "bytes": len(self.content),
            "media_type": self.media_type,
            "url": f"/api/releases/{release}/files/{self.name}",
        }


@dataclass(frozen=True)
class ReleaseTable:
    name: str
    description: str
    header: list[str]
    rows: list[list[Any]]


def _tables(data: dict[str, Any]) -> list[ReleaseTable]:
    """The release's tables, from its canonical JSON (plain values only)."""
    from .tables import leaderboard_table

    tables = []
    for stage, answer in sorted(data["leaderboards"].items()):
        header, rows = leaderboard_table(answer)
        tables.append(
            ReleaseTable(
                f"leaderboard_{stage}",
                f"The {stage} leaderboard as the API answered it at the release: one row per "
                "agent, every column of the CSV download.",
                list(header),
                [list(row) for row in rows],
            )
        )
    for name in ("tasks", "submissions", "human_reviews"):
        table = data[name]
        tables.append(ReleaseTable(name, TABLE_DESCRIPTIONS[name], table["header"], table["rows"]))
    judgments = data["judgments"]
    header = judgments["header"]
    scores_at, id_at = header.index("scores"), header.index("id")
    tables.append(
        ReleaseTable(
            "judgments",
            TABLE_DESCRIPTIONS["judgments"],
            [c for c in header if c != "scores"],
            [[v for i, v in enumerate(row) if i != scores_at] for row in judgments["rows"]],
        )
    )
    tables.append(
        ReleaseTable(
            "judgment_scores",
            TABLE_DESCRIPTIONS["judgment_scores"],
            ["judgment_id", "dimension", "score"],
            [
                [row[id_at], dimension, score]
                for row in judgments["rows"]
                for dimension, score in sorted(row[scores_at].items())
            ],
        )
    )
    judge_header = ["name", "model", "model_family"]
    tables.append(
        ReleaseTable(
            "judges",
            TABLE_DESCRIPTIONS["judges"],
            judge_header,
            [[j[k] for k in judge_header] for j in data["judges"]],
        )
    )
    return tables


def _column(values: list[Any]):
    """One Parquet column: its type inferred; nested, mixed or all-empty values as text."""
    import pyarrow as pa

    if any(isinstance(v, dict | list) for v in values):
        values = [None if v is None else json.dumps(v, sort_keys=True) for v in values]
    try:
        array = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        array = pa.array([None if v is None else str(v) for v in values], type=pa.string())
    if pa.types.is_null(array.type):
        array = array.cast(pa.string())
    return array


def parquet_bytes(table: ReleaseTable) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = [list(column) for column in zip(*table.rows, strict=True)] or [
        [] for _ in table.header
    ]
    arrow = pa.table(
        {name: _column(values) for name, values in zip(table.header, columns, strict=True)}
    )
    buffer = io.BytesIO()
    pq.write_table(arrow, buffer, compression="zstd")
    return buffer.getvalue()


def _croissant_type(arrow_type) -> Any:
    import mlcroissant as mlc
    import pyarrow as pa

    if pa.types.is_boolean(arrow_type):
        return mlc.DataType.BOOL
    if pa.types.is_integer(arrow_type):
        return mlc.DataType.INTEGER
    if pa.types.is_floating(arrow_type):
        return mlc.DataType.FLOAT
    return mlc.DataType.TEXT


def citation(name: str, created_at: dt.datetime) -> str:
    """The BibTeX of a release before it has a hash (the card is part of what it hashes)."""
    key = "mlrbench_" + "".join(c if c.isalnum() else "_" for c in name)
    return (
        f"@misc{{{key},\n"
        f"  title = {{MLR-Bench leaderboard, release {name}}},\n"
        f"  year = {{{created_at:%Y}}},\n"
        f"  month = {{{created_at:%b}}},\n"
        f"  howpublished = {{\\url{{{release_url(name)}}}}}\n"
        "}\n"
    )


def release_url(name: str) -> str:
    return f"{settings.RELEASE_BASE_URL.rstrip('/')}/releases/{name}/"


def files_url(name: str) -> str:
    """Where the release's files are served (absolute with RELEASE_BASE_URL set)."""
    return f"{settings.RELEASE_BASE_URL.rstrip('/')}/api/releases/{name}/files/"


def croissant_metadata(
    *, name: str, notes: str, created_at: dt.datetime, files: Sequence[ReleaseFileData]
) -> dict[str, Any]:
    """The Croissant JSON-LD of the Parquet files, validated: an error refuses the release.

    Long because the Croissant document is one literal, field by field."""
    import mlcroissant as mlc
    import pyarrow.parquet as pq

    context = mlc.Context()
    distribution, record_sets = [], []
    for file in files:
        table = Path(file.name).stem
        distribution.append(
            mlc.FileObject(
                ctx=context,
                id=file.name,
                name=file.name,
                content_url=file.name,
                encoding_formats=[mlc.EncodingFormat.PARQUET],
                sha256=file.sha256,
                content_size=f"{len(file.content)} B",
            )
        )
        schema = pq.read_schema(io.BytesIO(file.content))
        record_sets.append(
            mlc.RecordSet(
                ctx=context,
                id=table,
                name=table,
                fields=[
                    mlc.Field(
                        ctx=context,
                        id=f"{table}/{column.name}",
                        name=column.name,
                        data_types=[_croissant_type(column.type)],
                        source=mlc.Source(
                            ctx=context,
                            file_object=file.name,
                            extract=mlc.Extract(ctx=context, column=column.name),
                        ),
                    )
                    for column in schema
                ],
            )
        )
    metadata = mlc.Metadata(
        ctx=context,
        name=f"mlrbench-release-{name}",
        description=notes or f"MLR-Bench leaderboard, release {name}.",
        license=[settings.RELEASE_LICENSE_URL],
        url=release_url(name),
        version="1.0.0",
        cite_as=citation(name, created_at),
        date_published=created_at,
        distribution=distribution,
        record_sets=record_sets,
    )
    if metadata.issues.errors:
        raise ReleaseFilesFailed(
            "the release's Croissant metadata is not valid: " + metadata.issues.report()
        )
    return json.loads(json.dumps(metadata.to_json(), default=str))


def croissant_validate(folder: Path) -> list[str]:
    """Read `croissant.json` of a release folder back with mlcroissant and load one
    record of every record set; returns the errors (none when it is valid)."""
    import mlcroissant as mlc
    from absl import logging as absl_logging

    # mlcroissant reports each step it executes at INFO; a release command stays quiet.
    absl_logging.set_verbosity(absl_logging.WARNING)
    try:
        with _mlcroissant_quiet():
            dataset = mlc.Dataset(jsonld=folder / CROISSANT_NAME)
            for record_set in dataset.metadata.record_sets:
                next(iter(dataset.records(record_set.uuid)), None)
    except mlc.ValidationError as exc:
        return [str(exc)]
    return list(dataset.metadata.issues.errors)


class _MlcroissantInfo(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or "mlcroissant" not in record.pathname


@contextlib.contextmanager
def _mlcroissant_quiet() -> Iterator[None]:
    """Without mlcroissant's INFO lines, which it logs on the root logger itself
    (`logging.info`: two a file read back, 22 a release), so no logger name
    can be turned down; its warnings still pass."""
    root = logging.getLogger()
    quiet = _MlcroissantInfo()
    root.addFilter(quiet)
    try:
        yield
    finally:
        root.removeFilter(quiet)


def dataset_card(
    *,
    name: str,
    notes: str,
    created_at: dt.datetime,
    tables: Sequence[ReleaseTable],
    data: dict[str, Any],
) -> str:
    """README.md for a dataset hub: the YAML header (one config per table, licence,
    citation) and what each table holds."""
    configs = "".join(
        f"- config_name: {t.name}\n  data_files:\n  - split: train\n    path: {t.name}.parquet\n"
        for t in tables
    )
    bibtex = citation(name, created_at)
    quoted = "".join(f"  {line}\n" for line in bibtex.splitlines())
    sections = "".join(
        f"### `{t.name}`\n\n{t.description} {len(t.rows)} row(s); columns: "
        + ", ".join(f"`{c}`" for c in t.header)
        + ".\n\n"
        for t in tables
    )
    first = tables[0].name if tables else "tasks"
    header = (
        "---\n"
        f"pretty_name: MLR-Bench leaderboard, release {name}\n"
        f"license: {settings.RELEASE_LICENSE}\n"
        "tags:\n- benchmark\n- ai-research-agents\n- llm-as-a-judge\n"
        f"configs:\n{configs}"
        f"citation: |\n{quoted}"
        "---\n\n"
    )
    about = (
        f"Frozen on {created_at.isoformat()} by the MLR-Bench site (version "
        f"{data['site_version']}, price table {data['price_table_version']}). The release's "
        f"JSON (`GET /api/releases/{name}/`) lists these files with their SHA-256, and its "
        "own SHA-256 covers that list.\n\n"
    )
    load = (
        "## Load\n\n```python\nimport pandas as pd\n"
        f'pd.read_parquet("{files_url(name)}{first}.parquet")\n'
        "# or, with the datasets library, from the folder or the hub:\n"
        f'# datasets.load_dataset("parquet", data_files="{first}.parquet")\n```\n\n'
    )
    return (
        header
        + f"# MLR-Bench leaderboard, release {name}\n\n"
        + (f"{notes}\n\n" if notes else "")
        + about
        + load
        + f"## Tables\n\n{sections}"
        + f"## Citation\n\n```bibtex\n{bibtex}```\n"
    )


def release_files_make(
    *, name: str, notes: str, created_at: dt.datetime, data: dict[str, Any]
) -> list[ReleaseFileData]:
    """Every file of the release, from its canonical JSON data (a dict read back from
    the canonical bytes, so the values are what the JSON says)."""
    tables = _tables(data)
    parquet = [ReleaseFileData(f"{t.name}.parquet", parquet_bytes(t)) for t in tables]
    croissant = croissant_metadata(name=name, notes=notes, created_at=created_at, files=parquet)
    card = dataset_card(name=name, notes=notes, created_at=created_at, tables=tables, data=data)
    files = [
        *parquet,
        ReleaseFileData(CARD_NAME, card.encode("utf-8")),
        ReleaseFileData(
            CROISSANT_NAME,
            json.dumps(croissant, indent=2, sort_keys=True, ensure_ascii=False).encode("utf-8"),
        ),
    ]
    with tempfile.TemporaryDirectory() as folder:
        for file in files:
            (Path(folder) / file.name).write_bytes(file.content)
        errors = croissant_validate(Path(folder))
    if errors:
        raise ReleaseFilesFailed(
            "the release's Croissant metadata is not valid: " + "; ".join(errors)
        )
    return files
