from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmark.services import TaskImportError, tasks_import


class Command(BaseCommand):
    help = (
        "Import MLR-Bench task files from a folder of <slug>.md files or a clone of the "
        "MLR-Bench repository (a folder with tasks/ inside). Validates every file first "
        "and writes nothing if one is malformed, unless --skip-invalid is given."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument(
            "--skip-invalid",
            action="store_true",
            help="import the valid files and list the malformed ones",
        )
        parser.add_argument(
            "--topics", type=Path, metavar="FILE", help="CSV of slug,topic rows to set topics"
        )

    def handle(self, *args, path: Path, skip_invalid: bool, topics: Path | None, **options):
        try:
            report = tasks_import(path=path, topics_csv=topics, skip_invalid=skip_invalid)
        except TaskImportError as exc:
            lines = "\n".join(f"  - {problem}" for problem in exc.problems)
            raise CommandError(
                f"Nothing was imported; {len(exc.problems)} problem(s):\n{lines}"
            ) from exc
        for skipped in report.skipped:
            self.stderr.write(self.style.WARNING(f"skipped {skipped}"))
        self.stdout.write(
            self.style.SUCCESS(
                f"tasks: {report.created} created, {report.updated} updated, "
                f"{report.unchanged} unchanged, {len(report.skipped)} skipped"
            )
        )
