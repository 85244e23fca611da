import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmark.mlrbench_import import (
    ImportOptions,
    ImportPartReport,
    ImportRefused,
    import_parts,
)
from common.bulk_writes import writes_deferred

PROGRESS_EVERY_SECONDS = 5.0


class Command(BaseCommand):
    help = (
        "Import a clone of the MLR-Bench repository: the tasks, then every part the "
        "installed apps register (agent runs, judge reviews, human scores). Idempotent: "
        "a second run creates nothing and says so."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        duplicates = parser.add_mutually_exclusive_group()
        duplicates.add_argument(
            "--strict-human-reviews",
            action="store_true",
            help="human scores: refuse the whole file when one reviewer scores one paper "
            "twice (by default the first row of each pair is kept and the others listed)",
        )
        duplicates.add_argument(
            "--skip-duplicates",
            action="store_true",
            help="human scores: keep the first of two rows by the same reviewer for one "
            "paper (the default now; kept so existing scripts still run)",
        )
        parser.add_argument(
            "--hallucination-agent",
            action="append",
            default=[],
            metavar="SYSTEM=AGENT",
            help="hallucination check: the agent a value of the `LLM` column names (repeatable; "
            "defaults: 'AI Scientist V2=ai-scientist-v2', 'MLR Agent=o4-mini')",
        )

    def handle(
        self,
        *args,
        path: Path,
        strict_human_reviews: bool,
        hallucination_agent: list[str],
        **options,
    ):
        if not (path / "tasks").is_dir():
            raise CommandError(f"{path} is not a clone of the MLR-Bench repository (no tasks/).")
        verbosity = options["verbosity"]

        interactive = self.stderr.isatty()
        last_line_at = 0.0

        def progress(message: str) -> None:
            # A terminal shows one line that updates; a log gets a line every
            # few seconds, not one per file.
            nonlocal last_line_at
            if verbosity < 1:
                return
            if interactive:
                self.stderr.write(f"\x1b[2K{message}", ending="\r")
            elif verbosity >= 2 or time.monotonic() - last_line_at >= PROGRESS_EVERY_SECONDS:
                last_line_at = time.monotonic()
                self.stderr.write(message)

        mapping = {}
        for item in hallucination_agent:
            system, sep, agent = item.partition("=")
            if not sep or not system.strip() or not agent.strip():
                raise CommandError(f"--hallucination-agent {item!r}: write SYSTEM=AGENT")
            mapping[system.strip()] = agent.strip()
        import_options = ImportOptions(
            strict_human_reviews=strict_human_reviews,
            progress=progress,
            hallucination_agents=mapping,
        )
        changed = 0
        problems = 0
        # Caches are invalidated once, after the last part, not once per row.
        with writes_deferred():
            for part in import_parts():
                try:
                    report = part.run(path, import_options)
                except ImportRefused as exc:
                    raise CommandError(f"{part.name}: {exc}") from exc
                self._report(part.name, report)
                changed += report.changed
                problems += len(report.problems)
        summary = "nothing new" if changed == 0 else f"{changed} rows created or updated"
        self.stdout.write(self.style.SUCCESS(f"done: {summary}; {problems} problem(s)"))

    def _report(self, name: str, report: ImportPartReport) -> None:
        counts = ", ".join(f"{n} {label}" for label, n in report.counts.items()) or "nothing"
        self.stdout.write(f"{name}: {counts}")
        for note in report.notes:
            self.stdout.write(f"  {name}: {note}")
        for problem in report.problems:
            self.stderr.write(self.style.WARNING(f"  {name}: could not import {problem}"))
