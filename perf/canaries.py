"""What `judge_canaries create` costs: 100 end-to-end submissions (the shared
sample's papers, logs and code, each made distinct), in a throwaway PostgreSQL
database, one twin per hallucination type and one control each.

Side by side in the same run:

- site: `canaries_create` for all of them (choice, planting, the citation check
  against every paper on the site, the altered file written, the rows copied);
- floor: the plain I/O the same canaries need at the least: read each source's
  paper and write one altered copy to the artifact store.

Goal (issue 31): under 1 s per canary, and no LLM call (litellm is made to
raise if anything calls it).

Run: DATABASE_URL=postgres://postgres@127.0.0.1:5432/mlrbench \\
     .venv/bin/python perf/canaries.py [--submissions 100] [--smoke]

`--smoke` (5 submissions) checks that the script still runs, in seconds, and
exits non-zero on any error.
"""

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MEDIA = tempfile.mkdtemp(prefix="perf-canaries-")
os.environ["MEDIA_ROOT"] = MEDIA
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
os.environ.setdefault("SECRET_KEY", "perf-only-secret-key")
os.environ.setdefault("DEBUG", "0")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

SAMPLE = Path(os.environ.get("MLRBENCH_DATA", ROOT.parent / "shared" / "mlrbench"))
TASK = "iclr2025_bi_align"


def _no_llm(*_args, **_kwargs):
    raise AssertionError("judge_canaries create called an LLM")


def sample_runs() -> list[dict[str, str]]:
    """The sample's end-to-end runs: paper, log and code of each."""
    runs = []
    for folder in sorted((SAMPLE / "agent_results").glob(f"end2end_*/{TASK}")):
        paper = folder / "results" / "paper.md"
        logs = sorted((folder / "results").glob("*log*")) + sorted(folder.glob("*log*"))
        code = sorted(p for p in folder.rglob("*.py"))[:5]
        if paper.exists():
            runs.append(
                {
                    "results/paper.md": paper.read_text(errors="replace"),
                    "results/log.txt": "\n".join(p.read_text(errors="replace") for p in logs[:2]),
                    **{
                        f"code/{p.name}": p.read_text(errors="replace") for p in code if p.is_file()
                    },
                }
            )
    if not runs:
        raise SystemExit(f"no end-to-end runs under {SAMPLE}: set MLRBENCH_DATA")
    return runs


def populate(n: int) -> None:
    from django.core.files.base import ContentFile

    from benchmark.models import Agent, Task, Team
    from submissions.models import Artifact, ArtifactKind, Submission

    kinds = {"results/paper.md": ArtifactKind.PAPER, "results/log.txt": ArtifactKind.LOG}
    team = Team.objects.create(name="perf", slug="perf")
    task = Task.objects.create(
        slug=TASK, title="Bidirectional Human-AI Alignment", conference="iclr", year=2025
    )
    runs = sample_runs()
    for i in range(n):
        agent = Agent.objects.create(team=team, name=f"agent-{i}", display_name=f"Agent {i}")
        submission = Submission.objects.create(
            agent=agent,
            task=task,
            stage="end2end",
            source="import",
            archive_sha256=f"{i:064x}",
            content_sha256=f"{i:064x}",
            status="ready",
        )
        for path, text in runs[i % len(runs)].items():
            data = (text + f"\n\n<!-- run {i} -->\n").encode()
            artifact = Artifact(
                submission=submission,
                kind=kinds.get(path, ArtifactKind.CODE),
                path=path,
                size=len(data),
                sha256=hashlib.sha256(data).hexdigest(),
            )
            artifact.file.save(f"submissions/{submission.pk}/{path}", ContentFile(data), save=False)
            artifact.save()


def floor(n_canaries: int) -> float:
    """Read each source's paper and write one altered copy: the least I/O a canary needs."""
    from common.storage import object_read, object_save
    from submissions.models import Artifact, ArtifactKind

    papers = list(
        Artifact.objects.filter(kind=ArtifactKind.PAPER, submission__agent__is_system=False)
    )
    started = time.perf_counter()
    for i in range(n_canaries):
        paper = papers[i % len(papers)]
        data = object_read(paper.file.name)
        object_save(f"floor/{i}/{paper.path}", data.replace(b".", b",", 1))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=100)
    parser.add_argument("--smoke", action="store_true", help="5 submissions: does it still run?")
    args = parser.parse_args()
    if args.smoke:
        args.submissions = 5

    import litellm

    litellm.completion = _no_llm
    litellm.acompletion = _no_llm

    from judging.models import Canary
    from judging.services.canaries import canaries_create

    test_name = f"perf_canaries_{os.getpid()}"
    connection.settings_dict.setdefault("TEST", {})["NAME"] = test_name
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        started = time.perf_counter()
        populate(args.submissions)
        print(
            f"data: {args.submissions} end-to-end submissions "
            f"({time.perf_counter() - started:.1f} s)"
        )

        started = time.perf_counter()
        report = canaries_create(stage="end2end", count=args.submissions, seed=1)
        site = time.perf_counter() - started
        made = len(report.created)
        assert made == Canary.objects.count() and made > 0, "no canary made"
        started = time.perf_counter()
        again = canaries_create(stage="end2end", count=args.submissions, seed=1)
        rerun = time.perf_counter() - started
        assert not again.created, "the same seed made something new"
        base = floor(made)

        per = site / made
        print(f"canaries made: {made} ({len(report.skipped)} kind(s) skipped with a reason)")
        print(f"site:  {site:.2f} s, {per * 1000:.1f} ms per canary (goal under 1000 ms)")
        print(f"floor: {base:.3f} s, {base / made * 1000:.2f} ms per canary (read + write)")
        print(f"ratio site / floor: {site / base:.1f}x; goal ratio {per:.3f} of 1 s per canary")
        print(f"re-run with the same seed: {rerun:.2f} s, nothing new")
        print("LLM calls: 0")
        if per >= 1.0:
            sys.exit("slower than 1 s per canary")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
