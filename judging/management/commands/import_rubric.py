from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from judging import services
from judging.rubrics import DEFAULT_RUBRICS


class Command(BaseCommand):
    help = (
        "Load a rubric prompt text (e.g. an official MLR-Judge prompt from the MLR-Bench "
        "repository's rubrics/ folder) as the stage's next rubric version, with the stage's "
        "dimensions and scales. New judgments of the stage use it."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--stage", required=True, choices=list(DEFAULT_RUBRICS))
        parser.add_argument(
            "--inactive", action="store_true", help="store it without using it for new judgments"
        )

    def handle(self, *args, file: Path, stage: str, inactive: bool, **options):
        try:
            prompt = file.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise CommandError(f"{file}: no such file") from exc
        except (UnicodeDecodeError, IsADirectoryError) as exc:
            raise CommandError(f"{file}: not a UTF-8 text file") from exc
        services.ensure_default_rubrics()
        try:
            rubric, created = services.rubric_import(
                stage=stage, prompt=prompt, source=file.name, activate=not inactive
            )
        except services.RubricError as exc:
            raise CommandError(str(exc)) from exc
        missing = [
            key
            for key in rubric.dimension_keys
            if key.lower() not in prompt.lower() and key != "Overall"
        ]
        if missing:
            self.stderr.write(
                self.style.WARNING(
                    f"the prompt never names {', '.join(missing)}: answers will be asked again "
                    "until they score every dimension of the stage"
                )
            )
        verb = "loaded" if created else "already loaded as"
        state = "active" if rubric.is_active else "inactive"
        self.stdout.write(
            self.style.SUCCESS(f"{verb} {stage} rubric v{rubric.version} ({state}, {file.name})")
        )
