from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from judging.rubrics import DEFAULT_RUBRICS, MlrcRubricError, mlrc_bench_dimensions, rubric_prompt
from judging.services.rubrics import RubricError, ensure_default_rubrics, rubric_import


class Command(BaseCommand):
    help = (
        "Load a rubric prompt text (e.g. an official MLR-Judge prompt from the MLR-Bench "
        "repository's rubrics/ folder) as the stage's next rubric version, with the stage's "
        "dimensions and scales. New judgments of the stage use it. With --mlrc-bench, FILE is "
        "MLRC-Bench's MLAgentBench/LLM_as_a_Judge.py: its five 1-5 dimensions (Clarity, "
        "Validity, Rigorousness, Innovativeness, Generalizability) become the method stage's "
        "rubric, as MLRC-Bench's judge rates a method."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--stage", required=True, choices=list(DEFAULT_RUBRICS))
        parser.add_argument(
            "--inactive", action="store_true", help="store it without using it for new judgments"
        )
        parser.add_argument(
            "--mlrc-bench",
            action="store_true",
            help="FILE is MLRC-Bench's LLM_as_a_Judge.py: load its rubric (method stage only)",
        )

    def handle(self, *args, file: Path, stage: str, inactive: bool, **options):
        try:
            prompt = file.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise CommandError(f"{file}: no such file") from exc
        except (UnicodeDecodeError, IsADirectoryError) as exc:
            raise CommandError(f"{file}: not a UTF-8 text file") from exc
        dimensions = None
        if options.get("mlrc_bench"):
            prompt, dimensions = self._mlrc_bench(prompt, stage)
        ensure_default_rubrics()
        try:
            rubric, created = rubric_import(
                stage=stage,
                prompt=prompt,
                source=file.name,
                activate=not inactive,
                dimensions=dimensions,
            )
        except RubricError as exc:
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

    def _mlrc_bench(self, source: str, stage: str) -> tuple[str, list[dict]]:
        """MLRC-Bench's rubric as dimensions and the prompt the site's judges get."""
        if stage != "method":
            raise CommandError("MLRC-Bench's rubric rates methods: use --stage method")
        try:
            dimensions = mlrc_bench_dimensions(source)
        except MlrcRubricError as exc:
            raise CommandError(f"not MLRC-Bench's judge rubric: {exc}") from exc
        spec = DEFAULT_RUBRICS[stage]
        prompt = rubric_prompt(
            what=spec.what, inputs=spec.inputs, dimensions=dimensions, extra_fields=[]
        )
        return prompt, dimensions
