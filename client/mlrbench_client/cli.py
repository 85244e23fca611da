"""`mlrbench`: submit runs to an MLR-Bench site, follow their judging, read the
leaderboard and export the public data. The site comes from `MLRBENCH_URL`
(default http://127.0.0.1:8000), the API token from `MLRBENCH_TOKEN`."""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import __version__
from .http import ClientError, Site, download, get, progress_bar, upload
from .packing import UPLOADABLE_AS_IS, PackingRefused, run_pack

POLL_SECONDS = 2.0


def _print_notices(answer: dict[str, Any]) -> None:
    for notice in answer.get("notices") or []:
        print(f"note: {notice}", file=sys.stderr)


def _archive_for(run: Path, scratch: Path) -> Path:
    if run.is_dir():
        archive = scratch / f"{run.resolve().name or 'run'}.zip"
        n = run_pack(run, archive)
        print(f"packed {n} file{'s' if n != 1 else ''} from {run}", file=sys.stderr)
        return archive
    if run.is_file() and run.name.lower().endswith(UPLOADABLE_AS_IS):
        return run
    if not run.exists():
        raise PackingRefused(f"{run}: no such file or folder")
    raise PackingRefused(f"{run} is neither a folder nor a .zip, .tar.gz or .md file")


def submit(site: Site, args: argparse.Namespace) -> int:
    fields = {"agent": args.agent, "task": args.task, "stage": args.stage}
    with tempfile.TemporaryDirectory(prefix="mlrbench-") as scratch:
        archive = _archive_for(Path(args.run), Path(scratch))
        try:
            answer = upload(site, "/api/submissions/", fields, archive, progress_bar)
        except ClientError as exc:
            if exc.status != 409 or not isinstance(exc.body, dict):
                raise
            # The same run was already submitted: that submission is the answer.
            submission_id = int(exc.body.get("id", 0))
            print(f"already submitted: submission {submission_id} ({exc})", file=sys.stderr)
            print(submission_id)
            return _follow(site, submission_id, args.timeout) if args.wait else 0
    print(f"submission {answer['id']} stored: version {answer.get('version')}", file=sys.stderr)
    print(f"  {answer.get('page_url', answer.get('url'))}", file=sys.stderr)
    _print_notices(answer)
    print(answer["id"])
    if args.wait:
        if answer.get("notices"):
            print("not waiting: nothing will judge it (see the note above)", file=sys.stderr)
            return 1
        return _follow(site, int(answer["id"]), args.timeout)
    return 0


def _scores_print(judging: dict[str, Any]) -> None:
    for judgment in judging.get("judgments", []):
        overall = (judgment.get("scores") or {}).get("Overall", {}).get("score")
        shown = f"Overall {overall}" if overall is not None else judgment.get("error") or ""
        print(f"  {judgment['judge']:<32} {judgment['status']:<10} {shown}")
    stage = judging.get("stage_scores", {}).get("with_code") or {}
    for dimension, score in stage.items():
        print(f"  {dimension:<20} {score}")
    score = judging.get("stage_score")
    # The panel whose mean it is (the site picks the one that judged it); none: its judges'.
    panel = judging.get("panel")
    if score is None:
        print("stage score: not yet")
    else:
        print(f"stage score: {score} ({f'panel {panel}' if panel else 'the mean of its judges'})")


def _follow(site: Site, submission_id: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    last = ""
    while True:
        judging = get(site, f"/api/submissions/{submission_id}/judgments/")
        progress = judging.get("progress", {})
        line = (
            f"judging: {progress.get('done', 0)} done, {progress.get('running', 0)} running, "
            f"{progress.get('queued', 0)} queued, {progress.get('failed', 0)} failed "
            f"of {progress.get('total', 0)}"
        )
        if line != last:
            print(line, file=sys.stderr)
            last = line
        if judging.get("complete"):
            _scores_print(judging)
            return 1 if progress.get("failed") else 0
        if time.monotonic() > deadline:
            print(f"gave up waiting after {timeout:.0f} s", file=sys.stderr)
            return 1
        time.sleep(POLL_SECONDS)


def status(site: Site, args: argparse.Namespace) -> int:
    submission = get(site, f"/api/submissions/{args.id}/")
    print(
        f"submission {submission['id']}: {submission.get('agent')} / {submission.get('task')} / "
        f"{submission.get('stage')} v{submission.get('version')}: {submission.get('status')}"
    )
    if submission.get("error"):
        print(f"  error: {submission['error']}")
    _scores_print(get(site, f"/api/submissions/{args.id}/judgments/"))
    return 0


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return "—" if value is None else str(value)


def leaderboard(site: Site, args: argparse.Namespace) -> int:
    if args.format == "csv":
        params = {"stage": args.stage, "format": "csv"}
        sys.stdout.write(get(site, "/api/leaderboard/", params, accept="text/csv, */*"))
        return 0
    board = get(site, "/api/leaderboard/", {"stage": args.stage})
    rows = board.get("rows", [])
    if args.format == "json":
        import json

        print(json.dumps(board, indent=2))
        return 0
    writer = csv.writer(sys.stdout, delimiter="\t", lineterminator="\n")
    if args.stage == "objective":
        writer.writerow(["rank", "agent", "tasks", "relative improvement"])
        for row in rows:
            writer.writerow(
                [
                    row["rank"],
                    row["agent"],
                    row["n_tasks"],
                    _cell(row.get("mean_relative_improvement")),
                ]
            )
        return 0
    writer.writerow(["rank", "agent", "tasks", "Overall", "95% interval", "cost per task"])
    for row in rows:
        interval = row.get("overall_ci") or [None, None]
        # One dash for an interval not known, not a dash on each side of one.
        known = None not in interval
        writer.writerow(
            [
                row["rank"],
                row["agent"],
                row["n_tasks"],
                _cell((row.get("scores") or {}).get("Overall")),
                f"{_cell(interval[0])}–{_cell(interval[1])}" if known else "—",
                _cell(row.get("cost_usd_per_task")),
            ]
        )
    return 0


def export(site: Site, args: argparse.Namespace) -> int:
    dest = Path(args.out)
    written = download(site, "/api/export/", dest)
    print(f"{dest}: {written} bytes", file=sys.stderr)
    return 0


STAGES = ["idea", "proposal", "experiment", "paper", "end2end"]


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="mlrbench", description=__doc__)
    root.add_argument("--version", action="version", version=f"mlrbench {__version__}")
    sub = root.add_subparsers(dest="command", required=True)
    p = sub.add_parser("submit", help="pack a run folder and upload it")
    p.add_argument("run", metavar="RUN_FOLDER", help="the run's folder (or a .zip, .tar.gz, .md)")
    p.add_argument("--agent", required=True)
    p.add_argument("--task", required=True)
    p.add_argument("--stage", required=True, choices=STAGES)
    p.add_argument("--wait", action="store_true", help="follow the judging and print the scores")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait (--wait)")
    p.set_defaults(run_command=submit)
    p = sub.add_parser("status", help="a submission's state and scores")
    p.add_argument("id", type=int)
    p.set_defaults(run_command=status)
    p = sub.add_parser("leaderboard", help="one stage's leaderboard")
    p.add_argument("--stage", required=True, choices=[*STAGES, "objective"])
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.set_defaults(run_command=leaderboard)
    p = sub.add_parser("export", help="the whole public dataset as a zip")
    p.add_argument("out", metavar="OUT.zip")
    p.set_defaults(run_command=export)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run_command(Site.from_environment(), args))
    except (ClientError, PackingRefused) as exc:
        print(f"mlrbench: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
