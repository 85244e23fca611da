"""MLR-Judge's tables: rubrics as data, judges (LLM configurations), and
judgments with one row per scored dimension so that scores can be range-checked
by the database and aggregated in SQL."""

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Q

from benchmark.models import ModelFamily
from common.llm_policy import destination_errors
from submissions.models import Stage, Submission


class JudgmentKind(models.TextChoices):
    """What a judgment is: a scoring of the stage's dimensions, or a hallucination
    review (typed findings of fabricated content). Each kind has its own rubric
    per stage, versioned on its own."""

    SCORE = "score", "Scores"
    HALLUCINATION = "hallucination", "Hallucination review"


class HallucinationType(models.TextChoices):
    """The four hallucination types of MLR-Bench's hallucination rubric; the labels
    are the rubric's own names (what a judge's answer and the published reviews say)."""

    FAKED_EXPERIMENTAL_RESULTS = "faked_experimental_results", "Faked Experimental Results"
    HALLUCINATED_METHODOLOGY = "hallucinated_methodology", "Hallucinated Methodology"
    NONEXISTENT_CITATIONS = "nonexistent_citations", "Nonexistent Citations"
    MATHEMATICAL_ERRORS = "mathematical_errors", "Mathematical Errors"


class Rubric(models.Model):
    """One stage's rubric of one kind at one version.

    `dimensions` is a list of `{"key", "label", "min", "max", "levels": {score: text}}`;
    `overall_key` names the overall dimension (always `Overall`); `extra_fields`
    names what a stage adds beyond scores (`Hallucination`, `Confidence`).
    """

    stage = models.CharField(max_length=16, choices=Stage.choices)
    kind = models.CharField(max_length=16, choices=JudgmentKind.choices, default=JudgmentKind.SCORE)
    version = models.PositiveIntegerField()
    # Empty for a hallucination rubric: it scores nothing.
    dimensions = models.JSONField()
    overall_key = models.CharField(max_length=64, default="Overall")
    extra_fields = models.JSONField(default=list, blank=True)
    prompt = models.TextField(help_text="The instructions given to the judge.")
    source = models.CharField(max_length=300, blank=True, help_text="Where the prompt came from.")
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["stage", "kind", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["stage", "kind", "version"], name="rubric_stage_kind_version_unique"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=JudgmentKind.values), name="rubric_kind_valid"
            ),
            models.CheckConstraint(condition=Q(version__gte=1), name="rubric_version_positive"),
        ]

    def __str__(self) -> str:
        if self.kind == JudgmentKind.HALLUCINATION:
            return f"{self.stage} hallucination rubric v{self.version}"
        return f"{self.stage} rubric v{self.version}"

    @property
    def dimension_keys(self) -> list[str]:
        return [dimension["key"] for dimension in self.dimensions]


# Judge names are the published folder suffixes, e.g. `gemini-2.5-pro-preview`:
# a slug that may also hold dots.
judge_name_validator = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
    "Use letters, digits, dots, hyphens and underscores, starting with a letter or digit.",
)
env_var_validator = RegexValidator(
    r"^[A-Za-z_][A-Za-z0-9_]*$", "The name of an environment variable, e.g. OPENAI_API_KEY."
)


def api_base_validate(value: str) -> None:
    """Any http(s) URL with a host, including single-label hosts such as a
    docker-compose service (`http://vllm:8000/v1`) that URLField would refuse."""
    from urllib.parse import urlsplit

    parts = urlsplit(value)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ValidationError("Enter an http:// or https:// URL with a host.")


class Judge(models.Model):
    """An LLM that judges: any litellm model string, optionally behind its own
    `api_base` (a self-hosted OpenAI-compatible server). The key itself is never
    stored, only the name of the environment variable that holds it."""

    name = models.CharField(max_length=100, unique=True, validators=[judge_name_validator])
    model = models.CharField(max_length=200, help_text="litellm model string")
    api_base = models.CharField(
        max_length=300,
        blank=True,
        validators=[api_base_validate],
        help_text="OpenAI-compatible server, e.g. http://vllm:8000/v1; empty: the provider's",
    )
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        validators=[env_var_validator],
        help_text="Name of the environment variable that holds the key (never the key).",
    )
    temperature = models.FloatField(default=0.0)
    max_tokens = models.PositiveIntegerField(default=4096)
    model_family = models.CharField(
        max_length=32, choices=ModelFamily.choices, default=ModelFamily.OTHER
    )
    requests_per_minute = models.PositiveIntegerField(default=60)
    timeout_seconds = models.FloatField(default=120.0)
    # The judge's own price, for a model litellm's table lacks (a self-hosted server,
    # a model newer than the table): both or neither. Empty: the table's price, and
    # a model the table does not list costs "unknown".
    input_usd_per_mtok = models.DecimalField(
        "input price",
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="USD per million input tokens; empty: litellm's price table.",
    )
    output_usd_per_mtok = models.DecimalField(
        "output price",
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="USD per million output tokens; set with the input price.",
    )
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(temperature__gte=0, temperature__lte=2), name="judge_temperature_range"
            ),
            models.CheckConstraint(
                condition=Q(requests_per_minute__gte=1), name="judge_rpm_positive"
            ),
            models.CheckConstraint(
                condition=(
                    Q(input_usd_per_mtok__isnull=True, output_usd_per_mtok__isnull=True)
                    # Not null spelled out: a check that is NULL (unknown) passes.
                    | Q(
                        input_usd_per_mtok__isnull=False,
                        output_usd_per_mtok__isnull=False,
                        input_usd_per_mtok__gte=0,
                        output_usd_per_mtok__gte=0,
                    )
                ),
                name="judge_price_both_or_neither",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def own_price(self) -> tuple[Decimal, Decimal] | None:
        """(input, output) USD per million tokens; None: litellm's table prices the judge."""
        if self.input_usd_per_mtok is None or self.output_usd_per_mtok is None:
            return None
        return self.input_usd_per_mtok, self.output_usd_per_mtok

    @property
    def has_own_price(self) -> bool:
        return self.own_price is not None

    def clean(self) -> None:
        super().clean()
        if (self.input_usd_per_mtok is None) != (self.output_usd_per_mtok is None):
            raise ValidationError(
                "Give both the input and the output price, or neither (litellm's table)."
            )
        for name in ("input_usd_per_mtok", "output_usd_per_mtok"):
            value = getattr(self, name)
            # A value that is not a number (NaN, infinity) is the field's own error.
            if value is not None and value.is_finite() and value < 0:
                raise ValidationError({name: "A price cannot be negative."})
        # Where the key and the calls may go (common.llm_policy); the gateway checks
        # again before each call.
        if problems := destination_errors(
            models=[self.model], api_base=self.api_base, api_key_env=self.api_key_env
        ):
            raise ValidationError(problems)


class JudgePanel(models.Model):
    """A named set of judges: a stage's score on a board is the mean of its panel's
    judges, and a submission counts there once each of them has a finished
    judgment of it. A panel's judges are fixed when it is made (a judge added
    later is a new panel), so a published score never changes under a name."""

    name = models.CharField(max_length=100, unique=True, validators=[judge_name_validator])
    judges = models.ManyToManyField(Judge, related_name="panels")
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class StagePanel(models.Model):
    """The panel a stage's boards use when none is asked for (`?panel=NAME`)."""

    stage = models.CharField(max_length=16, choices=Stage.choices, unique=True)
    panel = models.ForeignKey(JudgePanel, on_delete=models.PROTECT, related_name="default_for")

    class Meta:
        ordering = ["stage"]

    def __str__(self) -> str:
        return f"{self.stage}: {self.panel}"


class JudgingCondition(models.TextChoices):
    WITH_CODE = "with_code", "With code and log"
    NO_CODE = "no_code", "Paper only"


class SubmissionJudgingState(models.TextChoices):
    """A submission's state as pages and the API show it: its intake status
    (`Submission.status`) until it is ready, then what its judgments say. Derived,
    never stored: `judging.selectors.submission_judging_state`."""

    RECEIVED = "received", "Received"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"
    JUDGING = "judging", "Judging"
    JUDGED = "judged", "Judged"


class JudgmentStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class Judgment(models.Model):
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="judgments")
    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="judgments")
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="judgments")
    # The rubric's kind, copied so that every read can tell scores from hallucination
    # reviews without a join (set from the rubric by the services and the import).
    kind = models.CharField(max_length=16, choices=JudgmentKind.choices, default=JudgmentKind.SCORE)
    condition = models.CharField(
        max_length=16, choices=JudgingCondition.choices, default=JudgingCondition.WITH_CODE
    )
    status = models.CharField(
        max_length=16, choices=JudgmentStatus.choices, default=JudgmentStatus.QUEUED
    )
    strengths = models.JSONField(default=list, blank=True)
    weaknesses = models.JSONField(default=list, blank=True)
    confidence = models.PositiveSmallIntegerField(null=True, blank=True)
    has_hallucination = models.BooleanField(null=True, blank=True)
    hallucination_details = models.TextField(blank=True)
    # A hallucination review's summary (`overall_assessment` in the rubric's answer).
    overall_assessment = models.TextField(blank=True)
    raw_response = models.TextField(blank=True)
    prompt_sha256 = models.CharField(max_length=64, blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    # None means the price is unknown (a model litellm has no price for), never 0.
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    latency_seconds = models.FloatField(null=True, blank=True)
    # Calls to the judge's model in the latest run (retries and re-asks included).
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    imported = models.BooleanField(default=False)
    # Set when a run claims the row; a run may only record its result while the
    # token is still its own, so a requeued judgment is never written twice.
    run_token = models.UUIDField(null=True, blank=True, editable=False)
    started_at = models.DateTimeField(null=True, blank=True)
    # The running judgment's last sign of life from its worker (judging/heartbeat.py):
    # silent for JUDGE_LEASE_STALE_SECONDS, its worker is gone and it is queued again.
    heartbeat_at = models.DateTimeField(null=True, blank=True, editable=False)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["submission", "judge__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["submission", "judge", "rubric", "condition"],
                name="judgment_unique_per_submission_judge_rubric_condition",
            ),
            models.CheckConstraint(
                condition=Q(status__in=JudgmentStatus.values), name="judgment_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(condition__in=JudgingCondition.values), name="judgment_condition_valid"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=JudgmentKind.values), name="judgment_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(confidence__isnull=True) | Q(confidence__gte=1, confidence__lte=5),
                name="judgment_confidence_range",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "started_at"]),
            models.Index(fields=["status", "heartbeat_at"], name="judgment_status_heartbeat"),
        ]

    def __str__(self) -> str:
        return f"{self.submission} by {self.judge}"

    @property
    def is_finished(self) -> bool:
        return self.status in (JudgmentStatus.DONE, JudgmentStatus.FAILED)


class DimensionScore(models.Model):
    """One dimension's score in one judgment; the range is the rubric's,
    copied onto the row so the database itself refuses a score outside it."""

    judgment = models.ForeignKey(Judgment, on_delete=models.CASCADE, related_name="scores")
    dimension = models.CharField(max_length=64)
    score = models.DecimalField(max_digits=4, decimal_places=2)
    scale_min = models.PositiveSmallIntegerField(default=1)
    scale_max = models.PositiveSmallIntegerField(default=10)
    justification = models.TextField(blank=True)

    class Meta:
        ordering = ["judgment", "dimension"]
        constraints = [
            models.UniqueConstraint(
                fields=["judgment", "dimension"], name="dimension_score_unique"
            ),
            models.CheckConstraint(
                condition=Q(score__gte=F("scale_min"), score__lte=F("scale_max")),
                name="dimension_score_within_scale",
            ),
            models.CheckConstraint(
                condition=Q(scale_min__lt=F("scale_max")), name="dimension_score_scale_ordered"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.dimension}={self.score}"


class HallucinationFinding(models.Model):
    """One finding of a judgment: a hallucination review's typed finding, or the
    experiment rubric's yes/no verdict as a finding without a type (`type` empty)."""

    judgment = models.ForeignKey(Judgment, on_delete=models.CASCADE, related_name="findings")
    position = models.PositiveSmallIntegerField(default=0)
    type = models.CharField(max_length=32, choices=HallucinationType.choices, blank=True)
    description = models.TextField(blank=True)
    evidence = models.TextField(blank=True)

    class Meta:
        ordering = ["judgment", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["judgment", "position"], name="hallucination_finding_position_unique"
            ),
            models.CheckConstraint(
                condition=Q(type__in=[*HallucinationType.values, ""]),
                name="hallucination_finding_type_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type or 'untyped'} finding of judgment {self.judgment_id}"


class DriftCheck(models.Model):
    """A re-scoring of a seeded sample of a judge's finished judgments with the
    same rubric version and prompt, to see whether the judge (its provider's
    model behind the same name) still scores as it did. Its rescores are kept
    apart (`DriftRescore`); the judgments themselves are never replaced."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="drift_checks")
    sample_size = models.PositiveIntegerField()
    seed = models.BigIntegerField()
    # {dimension: mean |new - old|} and {dimension: how many moved by 2 or more}.
    mean_abs_change = models.JSONField(default=dict)
    n_changed_2plus = models.JSONField(default=dict)
    n_rescored = models.PositiveIntegerField(default=0)
    n_failed = models.PositiveIntegerField(default=0)
    threshold = models.FloatField()
    flagged = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"drift of {self.judge} at {self.created_at:%Y-%m-%d %H:%M}"

    @property
    def max_mean_abs_change(self) -> float | None:
        values = [float(v) for v in self.mean_abs_change.values()]
        return max(values) if values else None


class DriftRescore(models.Model):
    """One judgment scored again: the new scores beside the judgment's own."""

    drift_check = models.ForeignKey(DriftCheck, on_delete=models.CASCADE, related_name="rescores")
    judgment = models.ForeignKey(Judgment, on_delete=models.CASCADE, related_name="rescores")
    scores = models.JSONField(default=dict, help_text="{dimension: the new score}")
    error = models.TextField(blank=True)
    raw_response = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["drift_check", "judgment"], name="drift_rescore_unique")
        ]

    def __str__(self) -> str:
        return f"judgment {self.judgment_id} scored again"


class CanaryRole(models.TextChoices):
    """A twin carries one planted fabrication; a control is the same run unchanged,
    so a judge's flags on it are false alarms."""

    TWIN = "twin", "Twin with a planted fabrication"
    CONTROL = "control", "Unchanged control"


class Canary(models.Model):
    """A copy of a real submission, owned by the system agent, that the judges review
    like any other: a twin with one fabrication planted at a known place (the
    ground truth: which file, which characters, what was there and what is now),
    or an unchanged control. Canaries measure the judges; they never count for an
    agent (`benchmark.models.SubmissionQuerySet.public`)."""

    submission = models.OneToOneField(Submission, on_delete=models.CASCADE, related_name="canary")
    source = models.ForeignKey(Submission, on_delete=models.PROTECT, related_name="canaries_made")
    role = models.CharField(max_length=16, choices=CanaryRole.choices)
    # The planted fabrication's type; empty for a control.
    kind = models.CharField(max_length=32, choices=HallucinationType.choices, blank=True)
    seed = models.BigIntegerField()
    # Where: the altered file and the planted text's characters in it [start, end).
    path = models.CharField(max_length=500, blank=True)
    start = models.PositiveIntegerField(null=True, blank=True)
    end = models.PositiveIntegerField(null=True, blank=True)
    original = models.TextField(blank=True, help_text="The text the plant replaced.")
    planted = models.TextField(blank=True, help_text="The text planted in its place.")
    # Strings a finding that points at the planted place quotes (a made-up number,
    # author, dataset, the altered equation), compared without case or spaces.
    markers = models.JSONField(default=list, blank=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["source", "role", "kind"]
        constraints = [
            models.UniqueConstraint(
                fields=["source", "role", "kind", "seed"], name="canary_unique_per_source_seed"
            ),
            models.CheckConstraint(
                condition=(
                    Q(role=CanaryRole.CONTROL, kind="", path="")
                    | Q(
                        role=CanaryRole.TWIN,
                        kind__in=HallucinationType.values,
                        start__isnull=False,
                        end__gt=F("start"),
                    )
                    & ~Q(path="")
                ),
                name="canary_twin_has_ground_truth",
            ),
            models.CheckConstraint(
                condition=~Q(submission=F("source")), name="canary_not_its_source"
            ),
        ]

    def __str__(self) -> str:
        what = self.kind or "control"
        return f"canary {what} of submission {self.source_id}"
