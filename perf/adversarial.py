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


FULL = Sizes(
    requests=20,
    bomb_mib=1024,
    brackets=1_000_000,
    makefile=24_000,
    nests=((200, 400_000), (8, 6_000_000)),
    zip_entries=1000,
    pdf_operators=200_000,
    codex=(5000, 10_000, 20_000),
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


def _concurrent_part(site: Site, sizes: Sizes, scratch: Path) -> None:
    """Finding 1's three uploads at once (`\\[` x 600,000 each in the probe), each
    by its own client in its own thread, while this thread asks /healthz until all
    have answered. In one process the uploads share one child pool, so each waits
    for the others' documents: a pessimistic reading of an upload's time. (Under
    gunicorn's sync workers each upload holds a worker for its intake, at most the
    summed budget: run more workers than uploads expected at once.)"""
    import threading

    from django.conf import settings
    from django.db import connection
    from django.test import Client

    from benchmark.models import Task

    brackets = sizes.brackets * 3 // 5
    budget = settings.INTAKE_WORK_SECONDS
    answers: list[tuple[float, int]] = []

    def upload(i: int) -> None:
        task = Task.objects.create(
            slug=f"{TASK}_c{i}", title=f"Perf {i}", conference="iclr", year=2025, description="#"
        )
        body = b"# M%d\n\n" % i + b"\\[" * brackets
        archive = _zip(scratch / f"math-at-once-{i}.zip", {"results/paper.md": body}, stored=True)
        client = Client()
        client.force_login(site.user)
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

    threads = [threading.Thread(target=upload, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    healths = []
    while any(thread.is_alive() for thread in threads):
        healths.append(site._page_seconds("/healthz"))
        time.sleep(0.05)
    for thread in threads:
        thread.join()
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
    worst = max(healths, default=0.0)
    _row(
        f"{shape}: slowest /healthz meanwhile",
        _ms(worst),
        f"/healthz {_ms(site.healthz)}",
        worst / site.healthz,
        "<= 1 s",
        worst <= 1.0,
    )


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
    entries = {"code/run.py": b"print(1)\n", "codex_log.log": _codex_log(calls)}
    shape = f"(8) Codex log, {calls:,} calls"
    pk = _intake_row(site, shape, _zip(scratch / "codex.zip", entries), "experiment")
    _page_row(site, shape, f"/submissions/{pk}/trace/codex_log.log", "trace")


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
