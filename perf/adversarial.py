"""Adversarial inputs, each side by side with its reference in the same run.

Every hostile shape is uploaded through the API (`POST /api/submissions/`,
Django's test client, the whole request as a web worker runs it) and its
intake timed against the upload's summed budget (`INTAKE_WORK_SECONDS`, below
gunicorn's 120 s worker timeout); the pages it leaves behind are timed
against `/healthz` (median of `--requests` GETs each, taking turns with
`/healthz`), and against the same page of an ordinary submission, so a
reader can tell what the hostile content costs from what the page costs.
Goals: an intake within the summed budget (never a worker timeout), a page
view within 10x of `/healthz` and within 2x of the ordinary page (what the
hostile content adds), a refusal where one is due.

(a)  The pathological paper: 40,000 `[` (quadratic for Python-Markdown).
(b)  The tar.gz bomb: 1 GiB of zeros (`--bomb-mib`) under `__MACOSX/`, refused
     against `gzip -t` on the same bytes (goals: at most 3x, at most 64 MiB).
(1)  Math: `"# M\\n\\n" + "\\\\[" * 1,000,000` as the paper, and with idea.md and
     proposal.md of the same body (issue 32, finding 1).
(2)  Sources: `code/Makefile` = `"_" * 24000`, `code/Main.java` = `"a " * 12000`;
     each file's page (finding 2).
(3)  Traces: `claude_output.json`, one user message whose content is 200 nested
     lists around 400,000 newlines, and 8 around 6,000,000 (finding 3).
(5)  Zip: 1,000 entries of 1 MiB of zeros (about 1 MB deflated); refused
     (finding 5).
(7)  PDFs: `INTAKE_MAX_PDFS` papers of one page of 200,000 `Tm (a) Tj`
     operators each (finding 7).
(8)  Codex: a log of N `exec` headers then N result headers, parsed at 5k, 10k
     and 20k (best of three each): linear is 2x per doubling, quadratic 4x
     (goal at most 3x); the 20k log's upload and its trace page (finding 8).

Issue 40's shapes ("every byte of untrusted work bounded"):

(h)  Derived HTML: 20 newline-only 256 KiB `.txt` files (115 s and 188.6 MB of
     stored HTML before); the intake, the derived bytes stored against
     INTAKE_MAX_DERIVED_BYTES, and a file's page.
(n)  6,001 small NUL-text files: the intake, the derived bytes stored, and the
     memory the upload's process allocated (tracemalloc; 1.1 GB RSS before).
(j)  A 31.5 MB `claude_output.json` of `{}` (a worker grew from 145 to 896 MB):
     the intake, and the upload's process's allocations against the file's size
     (the parse is the child's, under TRACE_PARSE_MEMORY_BYTES).
(m)  40 Makefiles of `_` (47-55 s each before): the intake against
     SOURCE_HIGHLIGHT_UPLOAD_SECONDS (plus 5 s); then three such uploads by one
     account at once: the ones past INTAKE_MAX_CONCURRENT_UPLOADS answered 429,
     and /healthz meanwhile.
(s)  Three slow clients trickling headers, against gunicorn (3 sync workers) as
     the site's front and against nginx with deploy/nginx.conf before it (when
     `nginx` is installed): /healthz meanwhile against /healthz unloaded.
(d)  5,000 nested JSON objects on the agent-run POST: 400, against /healthz.
(p)  The provenance ledger in the intake (issue 38): a paper of 60,000 table rows of
     five result numbers (past the 5,000 the ledger places), each printed by a `run`
     step of a 60,000-step MLR-Agent trace, with a cell of 300,000 `![x](` and one of
     300,000 `[` (the claims' link rule was quadratic there); the intake against the
     summed budget, the page with its marks and ledger table against /healthz and the
     ordinary page.
(u)  Names and stages: U+202E in a name, NFC/NFD twins, an experiment without
     results: each refused.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mlrbench .venv/bin/python perf/adversarial.py

With TEST_DATABASE_TEMPLATE set (scripts/database_template.py) the database is
a copy of the template, not migrated again. `--smoke` uses tiny sizes (seconds),
prints the same lines and fails only if the script breaks or a refusal due is
not made; the full mode exits non-zero when a goal is missed.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import tracemalloc
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
os.environ.setdefault("SECRET_KEY", "perf-only-secret-key")
os.environ.setdefault("ALLOWED_HOSTS", "testserver,localhost")
os.environ.setdefault("STATIC_MANIFEST", "0")  # served from the finders, no collectstatic
MEDIA = tempfile.mkdtemp(prefix="mlrbench-perf-media-")
os.environ["MEDIA_ROOT"] = MEDIA
MIB = 1024 * 1024
PAGE_GOAL = 10.0  # a page view, against /healthz
ORDINARY_GOAL = 2.0  # a page view, against the same page of an ordinary submission
DOUBLING_GOAL = 3.0  # linear is 2x per doubling, quadratic 4x
ORDINARY_PAPER = b"# A paper\n\nWith a result: accuracy 0.91.\n"
TASK = "iclr2025_perf"


@dataclass(frozen=True)
class Sizes:
    requests: int
    bomb_mib: int
    brackets: int  # the math paper's `\[`
    makefile: int  # `_` in code/Makefile (Main.java: half as many `a `)
    nests: tuple[tuple[int, int], ...]  # (depth, newlines) of each trace
    zip_entries: int  # of 1 MiB of zeros each
    pdf_operators: int
    codex: tuple[int, ...]
    newline_files: tuple[int, int]  # (files, KiB of newlines each)
    nul_files: tuple[int, int]  # (files, KiB of NULs each)
    balloon_entries: int  # `{}` in the trace
    makefiles: tuple[int, int]  # (files, `_` each)
    slow_seconds: float  # how long the slow clients trickle
    provenance_rows: int  # table rows of five result numbers, each printed by a `run` step
    provenance_openers: int  # `![x](` in one table cell (the claims' link rule)


FULL = Sizes(
    requests=20,
    bomb_mib=1024,
    brackets=1_000_000,
    makefile=24_000,
    nests=((200, 400_000), (8, 6_000_000)),
    zip_entries=1000,
    pdf_operators=200_000,
    codex=(5000, 10_000, 20_000),
    newline_files=(20, 256),
    nul_files=(6001, 4),
    balloon_entries=10_500_000,
    makefiles=(40, 24_000),
    slow_seconds=20.0,
    provenance_rows=60_000,
    provenance_openers=300_000,
)
# Still past INLINE_RENDER_BYTES (the child's path) and past the zip's ratio floor.
SMOKE = Sizes(
    requests=3,
    bomb_mib=16,
    brackets=20_000,
    makefile=2400,
    nests=((20, 4000),),
    zip_entries=24,
    pdf_operators=2000,
    codex=(250, 500, 1000),
    newline_files=(3, 32),
    nul_files=(60, 4),
    balloon_entries=100_000,
    makefiles=(4, 2400),
    slow_seconds=4.0,
    provenance_rows=400,
    provenance_openers=5000,
)


@dataclass(frozen=True)
class Row:
    shape: str
    measured: str
    reference: str
    ratio: float | None
    goal: str
    met: bool


ROWS: list[Row] = []


def _row(shape: str, measured: str, reference: str, ratio: float | None, goal: str, met: bool):
    row = Row(shape, measured, reference, ratio, goal, met)
    ROWS.append(row)
    ratio_text = "" if ratio is None else f"{ratio:.2f}x"
    print(
        f"  {shape:<44} {measured:>22}  {reference:>24}  {ratio_text:>8}  {goal:<24} "
        f"{'yes' if met else 'NO'}",
        flush=True,
    )


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=None)
    parser.add_argument("--bomb-mib", type=int, default=None)
    parser.add_argument(
        "--parts", default="", help="comma-separated part letters to run only those, e.g. 1,8"
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: does the script run?")
    return parser.parse_args()


def _sizes(args: argparse.Namespace) -> Sizes:
    sizes = SMOKE if args.smoke else FULL
    return Sizes(
        **{
            **sizes.__dict__,
            "requests": args.requests or sizes.requests,
            "bomb_mib": args.bomb_mib or sizes.bomb_mib,
        }
    )


# --- building the hostile files ----------------------------------------------


class _Zeros(io.RawIOBase):
    def __init__(self, size: int):
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def _bomb(path: Path, size: int) -> None:
    with tarfile.open(path, "w:gz", compresslevel=9) as archive:
        paper = b"# A paper\n\nWith a result.\n"
        info = tarfile.TarInfo("results/paper.md")
        info.size = len(paper)
        archive.addfile(info, io.BytesIO(paper))
        junk = tarfile.TarInfo("__MACOSX/results/._zeros.bin")
        junk.size = size
        archive.addfile(junk, io.BufferedReader(_Zeros(size), buffer_size=MIB))


def _zip(path: Path, entries: dict[str, bytes], *, stored: bool = False) -> Path:
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "w", method, compresslevel=None if stored else 9) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return path


def _nested_trace(depth: int, newlines: int) -> bytes:
    content = json.dumps("\n" * newlines)
    return f'[{{"role":"user","content": {"[" * depth}{content}{"]" * depth}}}]'.encode()


def _pdf(operators: int) -> bytes:
    """One page whose content stream (Flate) is `operators` text placements."""
    content = b"BT /F1 12 Tf\n" + b"1 0 0 1 10 10 Tm (a) Tj\n" * operators + b"ET\n"
    stream = zlib.compress(content, 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def _codex_log(calls: int) -> bytes:
    """`calls` exec headers, then a result header for each: every call waits."""
    stamp = "[2025-07-30T13:48:02]"
    lines = [
        f"{stamp} OpenAI Codex v0.5.0 (research preview)",
        "--------",
        "model: o4-mini",
        "--------",
        f"{stamp} User instructions:",
        "Run the experiments.",
    ]
    lines += [f"{stamp} exec bash -lc 'echo {n}' in /w" for n in range(calls)]
    for n in range(calls):
        lines += [f"{stamp} bash -lc 'echo {n}' succeeded in 9ms:", str(n)]
    lines.append(f"{stamp} tokens used: 1000")
    return ("\n".join(lines) + "\n").encode()


def _provenance_run(rows: int, openers: int) -> dict[str, bytes]:
    """A paper of `rows` table rows of five distinct result numbers, and an
    MLR-Agent trace whose `run` steps print them, one step a row (the ledger
    places every number); `openers` `![x](` and `[` in cells of its last rows."""
    numbers = [[f"{row}.{column}{row % 97:02d}1" for column in range(5)] for row in range(rows)]
    lines = ["# Results", "", "| Method | a | b | c | d | e |", "|---|---|---|---|---|---|"]
    lines += [f"| m{row} | " + " | ".join(cells) + " |" for row, cells in enumerate(numbers)]
    lines += [f"| brackets | {'![x](' * openers} 0.123 | {'[' * openers} 0.456 | 1 | 2 | 3 |"]
    steps = []
    for row, cells in enumerate(numbers):
        call = {
            "id": f"c{row}",
            "type": "function",
            "function": {"name": "run", "arguments": json.dumps({"command": f"python r.py {row}"})},
        }
        steps.append(
            {
                "index": row,
                "message": {"role": "assistant", "content": "", "tool_calls": [call]},
                "tool_results": [
                    {"tool_call_id": f"c{row}", "name": "run", "content": " ".join(cells)}
                ],
            }
        )
    trace = {"format": "mlr-agent-trace", "version": 1, "steps": steps}
    return {
        "results/paper.md": ("\n".join(lines) + "\n").encode(),
        "agent_output.json": json.dumps(trace).encode(),
        "code/r.py": b"import sys\nprint(*compute(int(sys.argv[1])))\n",
    }


def _provenance_part(site: Site, sizes: Sizes, scratch: Path) -> None:
    """(p) The provenance ledger in the intake: many numbers, each placed in a
    large trace, and the claims' link rule on 300,000 openers; the page with its
    marks and ledger table."""
    from submissions.ledger import submission_ledger
    from submissions.models import Submission

    files = _provenance_run(sizes.provenance_rows, sizes.provenance_openers)
    shape = f"(p) {sizes.provenance_rows:,} rows x 5 numbers, traced"
    archive = _zip(scratch / "provenance.zip", files)
    pk = _intake_row(site, shape, archive, "end2end")
    if pk is not None:
        ledger = submission_ledger(submission=Submission.objects.get(pk=pk), compute=False) or {}
        print(
            f"    {shape}: ledger {ledger.get('status')}, {len(ledger.get('entries', [])):,} "
            f"entries; {ledger.get('note', '')[:120]}"
        )
    _page_row(site, shape, f"/submissions/{pk}/", "submission")


# --- measuring ---------------------------------------------------------------


class Site:
    """The test client, an uploader with an agent, and the ordinary submission."""

    def __init__(self, requests: int):
        from django.contrib.auth.models import User
        from django.test import Client

        from benchmark.models import Agent, Task, Team

        self.requests = requests
        self.user = User.objects.create_user("perf-uploader")  # signs in with force_login
        team = Team.objects.create(name="perf", slug="perf")
        team.members.add(self.user)
        Agent.objects.create(team=team, name="perf-agent", display_name="Perf")
        Task.objects.create(
            slug=TASK, title="Perf", conference="iclr", year=2025, description="# Perf"
        )
        self.uploads = 0
        self.uploader = Client()
        self.uploader.force_login(self.user)
        self.reader = Client()  # anonymous
        self.healthz = self._page_seconds("/healthz", warm=True)
        self.ordinary: dict[str, float] = {}

    def upload(self, archive: Path, stage: str) -> tuple[float, object]:
        with archive.open("rb") as handle:
            started = time.perf_counter()
            response = self.uploader.post(
                "/api/submissions/",
                {"agent": "perf-agent", "task": TASK, "stage": stage, "archive": handle},
            )
            seconds = time.perf_counter() - started
        return seconds, response

    def _page_seconds(self, url: str, *, warm: bool = False) -> float:
        if warm:
            self.reader.get(url)
        started = time.perf_counter()
        response = self.reader.get(url)
        assert response.status_code in (200, 503), (url, response.status_code)
        return time.perf_counter() - started

    def page_vs_healthz(self, url: str) -> tuple[float, float]:
        """Medians of `requests` GETs of `url` and of /healthz, taking turns."""
        self._page_seconds(url, warm=True)
        pages, healths = [], []
        for _ in range(self.requests):
            pages.append(self._page_seconds(url))
            healths.append(self._page_seconds("/healthz"))
        return statistics.median(pages), statistics.median(healths)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _intake_row(site: Site, shape: str, archive: Path, stage: str, *, refused: bool = False):
    """Upload `archive`; its time against the summed budget. Returns the submission
    id (None when refused, which `refused` says is due)."""
    from django.conf import settings

    seconds, response = site.upload(archive, stage)
    budget = settings.INTAKE_WORK_SECONDS
    status = response.status_code  # type: ignore[attr-defined]
    body = response.json()  # type: ignore[attr-defined]
    answer = "201" if status == 201 else f"{status} {_first_error(body)[:60]}"
    print(f"    {shape}: {archive.stat().st_size / 1024:.1f} KiB archive, answered {answer}")
    assert status in (201, 400), (shape, status, body)
    met = seconds <= budget and (status == 400) == refused
    goal = "refused, <= budget" if refused else "<= summed budget"
    _row(
        f"{shape}: intake", f"{seconds:.2f} s", f"budget {budget:g} s", seconds / budget, goal, met
    )
    if refused and status != 400:
        raise SystemExit(f"{shape}: accepted, but it must be refused")
    return body.get("id") if status == 201 else None


def _first_error(body: dict) -> str:
    errors = body.get("errors") or [{}]
    return str(errors[0].get("message", ""))


def _page_row(site: Site, shape: str, url: str, ordinary: str | None = None) -> None:
    if "/None/" in url:
        return  # refused where it should not have been: its intake row says so
    page, health = site.page_vs_healthz(url)
    ratio = page / health
    _row(
        f"{shape}: page",
        _ms(page),
        f"/healthz {_ms(health)}",
        ratio,
        f"<= {PAGE_GOAL:g}x",
        ratio <= PAGE_GOAL,
    )
    if ordinary is not None and ordinary in site.ordinary:
        base = site.ordinary[ordinary]
        ratio = page / base
        goal = f"<= {ORDINARY_GOAL:g}x"
        _row(
            f"{shape}: page",
            _ms(page),
            f"ordinary {_ms(base)}",
            ratio,
            goal,
            ratio <= ORDINARY_GOAL,
        )


# --- the shapes --------------------------------------------------------------


def _ordinary(site: Site, scratch: Path) -> None:
    archive = _zip(
        scratch / "ordinary.zip",
        {
            "results/paper.md": ORDINARY_PAPER,
            "code/run.py": b"def train():\n    return 0.91\n",
            "results/log.txt": b"accuracy 0.91\n",
            "claude_output.json": _nested_trace(1, 3),
        },
    )
    seconds, response = site.upload(archive, "end2end")
    assert response.status_code == 201, response.content  # type: ignore[attr-defined]
    pk = response.json()["id"]  # type: ignore[attr-defined]
    for kind, url in (
        ("submission", f"/submissions/{pk}/"),
        ("file", f"/submissions/{pk}/files/code/run.py"),
        ("trace", f"/submissions/{pk}/trace/claude_output.json"),
    ):
        site.ordinary[kind], _ = site.page_vs_healthz(url)
    print(
        f"    the ordinary submission: intake {seconds:.2f} s; pages: submission "
        f"{_ms(site.ordinary['submission'])}, file {_ms(site.ordinary['file'])}, trace "
        f"{_ms(site.ordinary['trace'])}; /healthz {_ms(site.healthz)}"
    )


def _paper_part(site: Site, scratch: Path) -> None:
    archive = _zip(scratch / "brackets.zip", {"results/paper.md": b"[" * 40_000})
    pk = _intake_row(site, "(a) 40,000 '['", archive, "paper")
    _page_row(site, "(a) 40,000 '['", f"/submissions/{pk}/", "submission")


def _bomb_part(sizes: Sizes, scratch: Path) -> None:
    from submissions.archives import ArchiveRefused, IntakeLimits, archive_unpack

    bomb = scratch / "bomb.tar.gz"
    _bomb(bomb, sizes.bomb_mib * MIB)
    refused = False
    out = scratch / "out"
    out.mkdir()
    tracemalloc.start()
    started = time.perf_counter()
    try:
        archive_unpack(source=bomb, dest=out, limits=IntakeLimits.from_settings())
    except ArchiveRefused:
        refused = True
    ours = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    if not refused:
        raise SystemExit("(b) the tar.gz bomb was accepted")
    started = time.perf_counter()
    subprocess.run(["gzip", "-t", str(bomb)], check=True)
    gzip_seconds = time.perf_counter() - started
    shape = f"(b) tar.gz bomb, {sizes.bomb_mib} MiB"
    print(f"    {shape}: {bomb.stat().st_size / 1024:.1f} KiB archive, refused")
    ratio = ours / gzip_seconds
    _row(f"{shape}: refusal", _ms(ours), f"gzip -t {_ms(gzip_seconds)}", ratio, "<= 3x", ratio <= 3)
    _row(f"{shape}: memory", f"{peak / MIB:.1f} MiB", "", None, "<= 64 MiB", peak <= 64 * MIB)


def _math_part(site: Site, sizes: Sizes, scratch: Path) -> None:
    body = b"# M\n\n" + b"\\[" * sizes.brackets
    shape = f"(1) {sizes.brackets:,} '\\['"
    # Stored, as in the probe: deflated, 2 MB of `\\[` is past the archive's ratio limit.
    archive = _zip(scratch / "math.zip", {"results/paper.md": body}, stored=True)
    pk = _intake_row(site, shape, archive, "paper")
    _page_row(site, shape, f"/submissions/{pk}/", "submission")
    three = {"idea.md": body, "proposal.md": body, "results/paper.md": body}
    shape = f"(1) {sizes.brackets:,} '\\[' x3 documents"
    pk = _intake_row(site, shape, _zip(scratch / "math3.zip", three, stored=True), "end2end")
    _page_row(site, shape, f"/submissions/{pk}/", "submission")
    _page_row(site, f"{shape}, idea.md", f"/submissions/{pk}/files/idea.md", "file")


def _uploads_at_once(site: Site, upload: Callable[[int], None], count: int = 3) -> list[float]:
    """Run `upload(0)` .. `upload(count - 1)` each in its own thread, asking /healthz
    from this thread until all have answered; the /healthz times, in seconds."""
    import threading

    threads = [threading.Thread(target=upload, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    healths = []
    while any(thread.is_alive() for thread in threads):
        healths.append(site._page_seconds("/healthz"))
        time.sleep(0.05)
    for thread in threads:
        thread.join()
    return healths


def _healthz_meanwhile_row(site: Site, shape: str, healths: list[float]) -> None:
    """The slowest /healthz asked while uploads ran, against /healthz unloaded."""
    worst = max(healths, default=0.0)
    _row(
        shape,
        _ms(worst),
        f"/healthz {_ms(site.healthz)}",
        worst / site.healthz,
        "<= 1 s",
        worst <= 1.0,
    )


def _concurrent_part(site: Site, sizes: Sizes, scratch: Path) -> None:
    """Finding 1's three uploads at once (`\\[` x 600,000 each in the probe), each
    by its own client in its own thread, while this thread asks /healthz until all
    have answered. In one process the uploads share one child pool, so each waits
    for the others' documents: a pessimistic reading of an upload's time. (Under
    gunicorn's sync workers each upload holds a worker for its intake, at most the
    summed budget: run more workers than uploads expected at once.)"""
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client

    from benchmark.models import Task, Team

    brackets = sizes.brackets * 3 // 5
    budget = settings.INTAKE_WORK_SECONDS
    answers: list[tuple[float, int]] = []

    def upload(i: int) -> None:
        task = Task.objects.create(
            slug=f"{TASK}_c{i}", title=f"Perf {i}", conference="iclr", year=2025, description="#"
        )
        body = b"# M%d\n\n" % i + b"\\[" * brackets
        archive = _zip(scratch / f"math-at-once-{i}.zip", {"results/paper.md": body}, stored=True)
        # Three accounts: one account's third upload at once is answered 429 (shape m).
        uploader = User.objects.create_user(f"perf-uploader-{i}")
        Team.objects.get(slug="perf").members.add(uploader)
        client = Client()
        client.force_login(uploader)
        try:
            with archive.open("rb") as handle:
                started = time.perf_counter()
                response = client.post(
                    "/api/submissions/",
                    {"agent": "perf-agent", "task": task.slug, "stage": "paper", "archive": handle},
                )
                answers.append((time.perf_counter() - started, response.status_code))
        finally:
            connection.close()

    healths = _uploads_at_once(site, upload)
    shape = f"(1) 3 uploads of {brackets:,} '\\[' at once"
    slowest = max(seconds for seconds, _status in answers)
    statuses = sorted(status for _seconds, status in answers)
    print(f"    {shape}: answered {statuses}, {len(healths)} /healthz asked meanwhile")
    _row(
        f"{shape}: slowest intake",
        f"{slowest:.2f} s",
        f"budget {budget:g} s",
        slowest / budget,
        "all 201, <= budget",
        slowest <= budget and statuses == [201, 201, 201],
    )
    _healthz_meanwhile_row(site, f"{shape}: slowest /healthz meanwhile", healths)


def _sources_part(site: Site, sizes: Sizes, scratch: Path) -> None:
    entries = {
        "results/paper.md": ORDINARY_PAPER,
        "results/log.txt": b"done\n",
        "code/Makefile": b"_" * sizes.makefile,
        "code/Main.java": b"a " * (sizes.makefile // 2),
    }
    shape = f"(2) Makefile of {sizes.makefile:,} '_'"
    pk = _intake_row(site, "(2) Makefile, Main.java", _zip(scratch / "src.zip", entries), "end2end")
    _page_row(site, shape, f"/submissions/{pk}/files/code/Makefile", "file")
    _page_row(
        site,
        f"(2) Main.java of {sizes.makefile // 2:,} 'a '",
        f"/submissions/{pk}/files/code/Main.java",
        "file",
    )


def _traces_part(site: Site, sizes: Sizes, scratch: Path) -> None:
    for depth, newlines in sizes.nests:
        entries = {
            "code/run.py": b"print(1)\n",
            "results.md": b"accuracy 0.91\n",  # an experiment's judges review its results
            "claude_output.json": _nested_trace(depth, newlines),
        }
        shape = f"(3) trace, {depth} lists, {newlines:,} newlines"
        archive = _zip(scratch / f"trace-{depth}.zip", entries, stored=True)  # as the probe
        pk = _intake_row(site, shape, archive, "experiment")
        _page_row(site, shape, f"/submissions/{pk}/trace/claude_output.json", "trace")


def _zip_part(site: Site, sizes: Sizes, scratch: Path) -> None:
    entries = {"results/paper.md": ORDINARY_PAPER}
    zeros = bytes(MIB)
    entries |= {f"results/zeros_{n}.bin": zeros for n in range(sizes.zip_entries)}
    shape = f"(5) zip, {sizes.zip_entries:,} x 1 MiB zeros"
    _intake_row(site, shape, _zip(scratch / "zeros.zip", entries), "paper", refused=True)


def _pdf_part(site: Site, sizes: Sizes, scratch: Path) -> None:
    from django.conf import settings

    pdf = _pdf(sizes.pdf_operators)
    count = settings.INTAKE_MAX_PDFS
    entries = {f"results/paper_{n}.pdf": pdf for n in range(count)}
    entries["code/run.py"] = b"print(1)\n"
    shape = f"(7) {count} PDFs x {sizes.pdf_operators:,} Tj"
    print(f"    {shape}: each PDF {len(pdf) / 1024:.1f} KiB")
    pk = _intake_row(site, shape, _zip(scratch / "pdfs.zip", entries), "end2end")
    if pk is not None:
        _page_row(site, shape, f"/submissions/{pk}/", "submission")


def _best_parse(text: bytes, runs: int = 3) -> float:
    from submissions.traces import trace_parse

    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        trace = trace_parse(lambda: text, reader="codex", size=len(text), seconds=3600)
        best = min(best, time.perf_counter() - started)
    assert trace["totals"]["tool_calls"] > 0, trace["note"]
    return best


def _codex_part(site: Site, sizes: Sizes, scratch: Path) -> None:
    previous: tuple[int, float] | None = None
    for calls in sizes.codex:
        seconds = _best_parse(_codex_log(calls))
        if previous is None:
            print(f"    (8) Codex log, {calls:,} calls: parsed in {_ms(seconds)} (best of 3)")
        else:
            ratio = seconds / previous[1]
            _row(
                f"(8) Codex parse, {calls:,} calls",
                _ms(seconds),
                f"{previous[0]:,} calls {_ms(previous[1])}",
                ratio,
                f"<= {DOUBLING_GOAL:g}x per doubling",
                ratio <= DOUBLING_GOAL,
            )
        previous = (calls, seconds)
    calls = sizes.codex[-1]
    entries = {
        "code/run.py": b"print(1)\n",
        "results.md": b"accuracy 0.91\n",
        "codex_log.log": _codex_log(calls),
    }
    shape = f"(8) Codex log, {calls:,} calls"
    pk = _intake_row(site, shape, _zip(scratch / "codex.zip", entries), "experiment")
    _page_row(site, shape, f"/submissions/{pk}/trace/codex_log.log", "trace")


# --- issue 40: every byte of untrusted work bounded ---------------------------


def _derived_bytes(pk: int | None) -> int:
    from django.db.models import Sum

    from submissions.models import DerivedArtifact

    if pk is None:
        return 0
    rows = DerivedArtifact.objects.filter(artifact__submission_id=pk)
    return rows.aggregate(total=Sum("size"))["total"] or 0


def _derived_row(shape: str, pk: int | None) -> None:
    from django.conf import settings

    stored = _derived_bytes(pk)
    cap = settings.INTAKE_MAX_DERIVED_BYTES
    _row(
        f"{shape}: derived HTML stored",
        f"{stored / MIB:.2f} MiB",
        f"cap {cap / MIB:g} MiB",
        stored / cap,
        "<= cap",
        stored <= cap,
    )


def _newlines_part(site: Site, sizes: Sizes, scratch: Path) -> None:
    files, kib = sizes.newline_files
    entries = {f"logs/empty_{n}.txt": b"\n" * (kib * 1024) for n in range(files)}
    entries["results/paper.md"] = ORDINARY_PAPER
    shape = f"(h) {files} x {kib} KiB of newlines"
    # Stored: deflated, newlines are past the archive's ratio limit.
    pk = _intake_row(site, shape, _zip(scratch / "newlines.zip", entries, stored=True), "paper")
    _derived_row(shape, pk)
    _page_row(site, shape, f"/submissions/{pk}/files/logs/empty_0.txt", "file")


def _nul_part(site: Site, sizes: Sizes, scratch: Path) -> None:
    files, kib = sizes.nul_files
    entries = {f"data/nul_{n}.txt": bytes(kib * 1024) for n in range(files)}
    entries["results/paper.md"] = ORDINARY_PAPER
    shape = f"(n) {files:,} x {kib} KiB of NULs"
    pk = _intake_row(site, shape, _zip(scratch / "nuls.zip", entries, stored=True), "paper")
    _derived_row(shape, pk)
    # Again (another run: the same one is a duplicate) under tracemalloc, which
    # slows the intake several times: allocations only, not timed.
    entries["results/paper.md"] = ORDINARY_PAPER + b"\nagain\n"
    archive = _zip(scratch / "nuls-again.zip", entries, stored=True)
    tracemalloc.start()
    try:
        _seconds, response = site.upload(archive, "paper")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 201, response.content  # type: ignore[attr-defined]
    size = archive.stat().st_size
    _row(
        f"{shape}: upload's allocations",
        f"{peak / MIB:.1f} MiB",
        f"archive {size / MIB:.1f} MiB",
        peak / size,
        "<= 64 MiB",
        peak <= 64 * MIB,
    )


def _balloon_part(site: Site, sizes: Sizes, scratch: Path) -> None:
    trace = b"[" + b"{}," * sizes.balloon_entries + b"{}]"
    entries = {
        "results/paper.md": ORDINARY_PAPER,
        "claude_output.json": trace,
    }
    shape = f"(j) trace of {sizes.balloon_entries:,} '{{}}'"
    archive = _zip(scratch / "balloon.zip", entries, stored=True)
    tracemalloc.start()
    try:
        pk = _intake_row(site, shape, archive, "end2end")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Read whole, sent to the child, stored: a few copies of the bytes, never the parse.
    _row(
        f"{shape}: upload's allocations",
        f"{peak / MIB:.1f} MiB",
        f"trace {len(trace) / MIB:.1f} MiB",
        peak / len(trace),
        "<= 8x the trace",
        peak <= 8 * len(trace),
    )
    _page_row(site, shape, f"/submissions/{pk}/trace/claude_output.json", "trace")


def _makefiles_archive(sizes: Sizes, scratch: Path, name: str, salt: int) -> Path:
    files, underscores = sizes.makefiles
    entries = {f"code/m{n}/Makefile": b"_" * underscores for n in range(files)}
    entries["results/paper.md"] = ORDINARY_PAPER + b"\n%d\n" % salt  # a different run each
    return _zip(scratch / name, entries)


def _makefiles_part(site: Site, sizes: Sizes, scratch: Path) -> None:
    from django.conf import settings
    from django.db import connection
    from django.test import Client

    files, underscores = sizes.makefiles
    shape = f"(m) {files} Makefiles of {underscores:,} '_'"
    archive = _makefiles_archive(sizes, scratch, "makefiles.zip", 0)
    seconds, response = site.upload(archive, "end2end")
    status = response.status_code  # type: ignore[attr-defined]
    budget = settings.SOURCE_HIGHLIGHT_UPLOAD_SECONDS + 5
    print(f"    {shape}: {archive.stat().st_size / 1024:.1f} KiB archive, answered {status}")
    _row(
        f"{shape}: intake",
        f"{seconds:.2f} s",
        f"highlight budget {budget:g} s",
        seconds / budget,
        "201, <= highlight budget",
        status == 201 and seconds <= budget,
    )

    answers: list[int] = []

    def upload(i: int) -> None:
        client = Client()
        client.force_login(site.user)
        path = _makefiles_archive(sizes, scratch, f"makefiles-{i}.zip", i + 1)
        try:
            with path.open("rb") as handle:
                reply = client.post(
                    "/api/submissions/",
                    {"agent": "perf-agent", "task": TASK, "stage": "end2end", "archive": handle},
                )
            answers.append(reply.status_code)
        finally:
            connection.close()

    healths = _uploads_at_once(site, upload)
    most = settings.INTAKE_MAX_CONCURRENT_UPLOADS
    accepted = answers.count(201)
    print(f"    {shape} x3 by one account at once: answered {sorted(answers)}")
    _row(
        f"{shape} x3 at once: accepted",
        f"{accepted} of 3",
        f"at most {most} at once",
        None,
        "rest answered 429",
        accepted <= most and all(status in (201, 429) for status in answers),
    )
    _healthz_meanwhile_row(site, f"{shape} x3 at once: slowest /healthz", healths)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_healthz(port: int, seconds: float = 120.0) -> None:
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5)  # noqa: S310
            return
        except urllib.error.HTTPError:
            return  # 503: up, and answering
        except OSError:
            time.sleep(0.25)
    raise SystemExit(f"nothing answered on port {port}")


def _healthz_seconds(port: int, timeout: float) -> float:
    import urllib.error
    import urllib.request

    started = time.perf_counter()
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=timeout)  # noqa: S310
    except urllib.error.HTTPError:
        pass  # 503 (a check failed) is still an answer
    except OSError:
        return timeout  # no answer at all within the timeout
    return time.perf_counter() - started


def _slow_clients(port: int, seconds: float, count: int = 3) -> list:
    """`count` sockets that send a request line, then a header byte a second."""
    import socket
    import threading

    def trickle(sock: socket.socket) -> None:
        ends = time.monotonic() + seconds
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
            while time.monotonic() < ends:
                sock.sendall(b"X")
                time.sleep(1)
        except OSError:
            pass  # the server gave up on it: what a front end should do
        finally:
            sock.close()

    threads = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        thread = threading.Thread(target=trickle, args=(sock,), daemon=True)
        thread.start()
        threads.append(thread)
    time.sleep(1)  # each is in a worker (or nginx) by now
    return threads


def _nginx_start(scratch: Path, upstream: int, port: int) -> subprocess.Popen | None:
    nginx = shutil.which("nginx")
    if nginx is None:
        return None
    folder = scratch / "nginx"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)  # nginx's workers may run as another user
    conf = (ROOT / "deploy/nginx.conf").read_text()
    conf = conf.replace("server web:8000;", f"server 127.0.0.1:{upstream};")
    conf = conf.replace("listen 8080;", f"listen 127.0.0.1:{port};")
    conf = conf.replace("/tmp/nginx", str(folder / "nginx"))  # noqa: S108 - its own paths, moved
    conf = conf.replace("access_log /dev/stdout;", "access_log off;")
    path = folder / "nginx.conf"
    path.write_text(conf)
    return subprocess.Popen(  # noqa: S603
        [nginx, "-c", str(path), "-g", "daemon off;"], stderr=subprocess.DEVNULL
    )


def _slow_part(sizes: Sizes, scratch: Path) -> None:
    gunicorn = shutil.which("gunicorn") or str(Path(sys.executable).parent / "gunicorn")
    port, front = _free_port(), _free_port()
    from django.db import connection

    db = connection.settings_dict  # the run's test database
    database_url = (
        f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}"
    )
    env = {**os.environ, "ALLOWED_HOSTS": "localhost,127.0.0.1", "DEBUG": "0"}
    if connection.vendor == "postgresql":
        env["DATABASE_URL"] = database_url
    web = subprocess.Popen(  # noqa: S603
        [gunicorn, "mlrbench_site.wsgi:application", "--bind", f"127.0.0.1:{port}"]
        + ["--workers", "3", "--timeout", "120", "--log-level", "warning"],
        cwd=ROOT,
        env=env,
    )
    proxy = None
    try:
        _wait_healthz(port)
        proxy = _nginx_start(scratch, port, front)
        wait = sizes.slow_seconds + 5
        unloaded = statistics.median(_healthz_seconds(port, wait) for _ in range(5))
        print(f"    /healthz straight from gunicorn, unloaded: {_ms(unloaded)}")
        fronts = [("gunicorn straight", port)]
        if proxy is not None:
            _wait_healthz(front, 30)
            fronts.append(("nginx before gunicorn", front))
        else:
            print("    nginx is not installed: only gunicorn straight is measured")
        for name, target in fronts:
            clients = _slow_clients(target, sizes.slow_seconds)
            seconds = _healthz_seconds(target, wait)
            for thread in clients:
                thread.join()
            ratio = seconds / unloaded
            shape = f"(s) 3 slow clients, {name}"
            # Straight is the reference (issue 40's finding); the deployment is nginx.
            met = ratio <= PAGE_GOAL if name.startswith("nginx") else True
            goal = f"<= {PAGE_GOAL:g}x" if name.startswith("nginx") else "(reference)"
            _row(f"{shape}: /healthz", _ms(seconds), f"unloaded {_ms(unloaded)}", ratio, goal, met)
    finally:
        for process in (proxy, web):
            if process is not None:
                process.terminate()
                process.wait(30)


def _deep_json_part(site: Site) -> None:
    from django.contrib.auth.models import User
    from django.test import Client

    from benchmark.roles import organiser_grant

    organiser = User.objects.create_user("perf-organiser")
    organiser_grant(user=organiser)  # the agent-run API is the organisers'
    staff = Client()
    staff.force_login(organiser)
    body = '{"a":' * 5000 + "1" + "}" * 5000
    staff.post("/api/agent-runs/", data=body, content_type="application/json")  # warm
    started = time.perf_counter()
    response = staff.post("/api/agent-runs/", data=body, content_type="application/json")
    seconds = time.perf_counter() - started
    ratio = seconds / site.healthz
    _row(
        "(d) 5,000 nested objects: agent-run POST",
        f"{response.status_code}, {_ms(seconds)}",
        f"/healthz {_ms(site.healthz)}",
        ratio,
        f"400, <= {PAGE_GOAL:g}x",
        response.status_code == 400 and ratio <= PAGE_GOAL,
    )


def _refusals_part(site: Site, scratch: Path) -> None:
    paper = {"results/paper.md": ORDINARY_PAPER}
    shapes = [
        ("(u) U+202E in a name", {**paper, "results/\u202egpj.exe": b"MZ"}, "paper"),
        ("(u) NFC/NFD twins", {**paper, "caf\u00e9.txt": b"1", "cafe\u0301.txt": b"2"}, "paper"),
        (
            "(u) experiment without results",
            {"code/run.py": b"print(1)\n", "results/log.txt": b"0.91\n"},
            "experiment",
        ),
    ]
    for number, (shape, entries, stage) in enumerate(shapes):
        _intake_row(
            site, shape, _zip(scratch / f"refused-{number}.zip", entries), stage, refused=True
        )


def _parts(site: Site, sizes: Sizes, scratch: Path) -> list[tuple[str, Callable[[], None]]]:
    return [
        ("an ordinary submission (the pages' second reference)", lambda: _ordinary(site, scratch)),
        ("(a) the pathological paper", lambda: _paper_part(site, scratch)),
        ("(b) the tar.gz bomb", lambda: _bomb_part(sizes, scratch)),
        ("(1) math protection", lambda: _math_part(site, sizes, scratch)),
        ("(1) three math uploads at once", lambda: _concurrent_part(site, sizes, scratch)),
        ("(2) source views", lambda: _sources_part(site, sizes, scratch)),
        ("(3) nested trace content", lambda: _traces_part(site, sizes, scratch)),
        ("(5) many small zip entries", lambda: _zip_part(site, sizes, scratch)),
        ("(7) PDFs per upload", lambda: _pdf_part(site, sizes, scratch)),
        ("(8) Codex logs", lambda: _codex_part(site, sizes, scratch)),
        ("(h) derived HTML of newline-only files", lambda: _newlines_part(site, sizes, scratch)),
        ("(n) many NUL-text files", lambda: _nul_part(site, sizes, scratch)),
        ("(j) a trace of empty messages", lambda: _balloon_part(site, sizes, scratch)),
        ("(m) Makefiles, one and three at once", lambda: _makefiles_part(site, sizes, scratch)),
        ("(s) slow clients", lambda: _slow_part(sizes, scratch)),
        ("(d) deep JSON", lambda: _deep_json_part(site)),
        ("(p) provenance ledger", lambda: _provenance_part(site, sizes, scratch)),
        ("(u) names and stages refused", lambda: _refusals_part(site, scratch)),
    ]


def main() -> None:
    args = _arguments()
    sizes = _sizes(args)
    import django

    django.setup()
    # A refused upload is the point here, not a warning worth a line.
    logging.getLogger("django.request").setLevel(logging.ERROR)
    logging.getLogger("axes").setLevel(logging.WARNING)
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    scratch = Path(tempfile.mkdtemp(prefix="mlrbench-perf-adversarial-"))
    print(f"creating a test database next to {connection.settings_dict['NAME']} ...", flush=True)
    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        site = Site(sizes.requests)
        print(
            f"  {'shape':<44} {'measured':>22}  {'reference':>24}  {'ratio':>8}  {'goal':<24} met"
        )
        wanted = {item.strip() for item in args.parts.split(",") if item.strip()}
        for title, part in _parts(site, sizes, scratch):
            key = title[1 : title.index(")")] if title.startswith("(") else ""
            if wanted and key and key not in wanted:
                continue
            print(title, flush=True)
            part()
    finally:
        connection.close()
        teardown_databases(old_config, verbosity=0)
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(MEDIA, ignore_errors=True)
    missed = [row.shape for row in ROWS if not row.met]
    print(f"{len(ROWS) - len(missed)} of {len(ROWS)} goals met" + (":" if missed else ""))
    for shape in missed:
        print(f"  missed: {shape}")
    if missed and not args.smoke:
        sys.exit(1)


if __name__ == "__main__":
    main()
