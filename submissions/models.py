"""Submissions and their files: one agent's output for one task and stage, its
inputs (lineage), its artifacts and what was derived from them at intake.
The tables were created by the benchmark app and keep its names (`db_table`;
submissions/migrations/0001_initial.py took them over, state only)."""

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.urls import reverse

from benchmark.models import Agent, Task


class Stage(models.TextChoices):
    IDEA = "idea", "Idea"
    PROPOSAL = "proposal", "Proposal"
    EXPERIMENT = "experiment", "Experiment"
    PAPER = "paper", "Paper"
    END2END = "end2end", "End to end"
    # Method code for an objective (MLRC-Bench style) task, run and scored by the site.
    METHOD = "method", "Method"


class SubmissionSource(models.TextChoices):
    UPLOAD = "upload", "Browser upload"
    API = "api", "API"
    IMPORT = "import", "Import"


class SubmissionStatus(models.TextChoices):
    """The intake's status. Whether a ready submission is being judged or judged is
    not stored: the judging app derives it from the judgments (see
    `submissions.states`)."""

    RECEIVED = "received", "Received"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class SubmissionQuerySet(models.QuerySet["Submission"]):
    def public(self) -> "SubmissionQuerySet":
        """Without the system agents' submissions (the judges' canaries): what every
        board, export, release, agreement and public list counts."""
        return self.filter(agent__is_system=False)

    def system(self) -> "SubmissionQuerySet":
        return self.filter(agent__is_system=True)


class Submission(models.Model):
    """One agent's output for one task and one stage; a new upload is a new version."""

    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="submissions")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="submissions")
    stage = models.CharField(max_length=16, choices=Stage.choices)
    version = models.PositiveIntegerField(default=1)
    uploader = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="submissions",
    )
    source = models.CharField(max_length=16, choices=SubmissionSource.choices)
    archive_sha256 = models.CharField(max_length=64)
    # The run's identity: SHA-256 of its files' sorted paths and hashes (see
    # archives.files_digest), the same however it was packed. Blank only for a
    # row that repeated an earlier version's content before this key existed.
    content_sha256 = models.CharField(max_length=64, blank=True, default="")
    status = models.CharField(
        max_length=16, choices=SubmissionStatus.choices, default=SubmissionStatus.RECEIVED
    )
    error = models.TextField(blank=True)
    # Cost of the run as the run itself recorded it; None means unknown, never 0.
    # The priced LLM steps' sum; `llm_unpriced_steps` steps had no price, so
    # with any of those it is a lower bound ("at least").
    llm_cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    llm_unpriced_steps = models.PositiveSmallIntegerField(default=0)
    # The LLM steps as priced at intake (`costs.step_json`), so that no page
    # reads and prices the token-usage files again; None for a row from before
    # they were stored (priced on first read, then stored).
    llm_steps = models.JSONField(null=True, blank=True, default=None, editable=False)
    agent_cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    agent_duration_seconds = models.FloatField(null=True, blank=True)
    # Lineage: the submissions of earlier stages this one was built from (a
    # stepwise agent's sampled inputs, or what an uploader names), in order.
    based_on = models.ManyToManyField(
        "self",
        symmetrical=False,
        through="SubmissionInput",
        through_fields=("submission", "based_on"),
        related_name="used_by",
        blank=True,
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SubmissionQuerySet.as_manager()

    class Meta:
        db_table = "benchmark_submission"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "task", "stage", "version"], name="submission_version_unique"
            ),
            # The very same archive again answers with the existing submission.
            models.UniqueConstraint(
                fields=["agent", "task", "stage", "archive_sha256"],
                name="submission_archive_unique",
            ),
            # The same files packed another way are the same run, not a new version.
            models.UniqueConstraint(
                fields=["agent", "task", "stage", "content_sha256"],
                condition=~Q(content_sha256=""),
                name="submission_content_unique",
            ),
            models.CheckConstraint(
                condition=Q(stage__in=Stage.values), name="submission_stage_valid"
            ),
            models.CheckConstraint(
                condition=Q(source__in=SubmissionSource.values), name="submission_source_valid"
            ),
            models.CheckConstraint(
                condition=Q(status__in=SubmissionStatus.values), name="submission_status_valid"
            ),
            models.CheckConstraint(condition=Q(version__gte=1), name="submission_version_positive"),
        ]
        indexes = [models.Index(fields=["stage", "status"])]

    def __str__(self) -> str:
        return f"{self.agent} / {self.task} / {self.stage} v{self.version}"

    def get_absolute_url(self) -> str:
        return reverse("submissions:submission-detail", kwargs={"submission_id": self.pk})


class SubmissionInput(models.Model):
    """One input of a submission (`Submission.based_on`), at its place in the
    list the uploader gave. Same task and an earlier stage are checked at intake
    (`submissions.lineage`); an input is kept while anything is built on it."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="inputs")
    based_on = models.ForeignKey(Submission, on_delete=models.PROTECT, related_name="outputs")
    position = models.PositiveSmallIntegerField()

    class Meta:
        db_table = "benchmark_submissioninput"
        ordering = ["submission", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["submission", "based_on"], name="submission_input_unique"
            ),
            models.UniqueConstraint(
                fields=["submission", "position"], name="submission_input_position_unique"
            ),
            models.CheckConstraint(
                condition=~Q(submission=F("based_on")), name="submission_input_not_itself"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.submission_id} based on {self.based_on_id}"


class ArtifactKind(models.TextChoices):
    TASK = "task", "Task"
    IDEA = "idea", "Idea"
    PROPOSAL = "proposal", "Proposal"
    RELATED_WORK = "related_work", "Related work"
    PAPER = "paper", "Paper"
    RESULTS = "results", "Results"
    LOG = "log", "Execution log"
    TRACE = "trace", "Coding-agent trace"
    CODE = "code", "Code"
    FIGURE = "figure", "Figure"
    DATA = "data", "Data"
    TOKEN_USAGE = "token_usage", "Token usage"
    OTHER = "other", "Other"


class Artifact(models.Model):
    """One file of a submission, stored under the submission's own folder."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="artifacts")
    kind = models.CharField(max_length=16, choices=ArtifactKind.choices)
    path = models.CharField(max_length=500, help_text="Relative path inside the run.")
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    file = models.FileField(max_length=700)

    class Meta:
        db_table = "benchmark_artifact"
        ordering = ["path"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "path"], name="artifact_path_unique"),
            models.CheckConstraint(
                condition=Q(kind__in=ArtifactKind.values), name="artifact_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.path


class DerivedKind(models.TextChoices):
    """What was derived once from an artifact at intake (a PDF's text, a markdown
    document's clean HTML, a trace's steps as JSON), for pages and judges to read
    instead of the file."""

    PDF_TEXT = "pdf_text", "Text extracted from a PDF"
    HTML = "html", "Clean HTML of a markdown document"
    TRACE_STEPS = "trace_steps", "Steps of a coding-agent trace"
    SOURCE_HTML = "source_html", "Highlighted HTML of a source file"
    PROVENANCE = "provenance", "Provenance ledger of the paper's numbers"


class DerivedArtifact(models.Model):
    """What the site made from an untrusted artifact at intake, stored once so that
    no request and no judge run parses or renders the file again: a PDF's text (in
    `file`), a markdown document's clean HTML (in `content`). Stale when the
    artifact's digest or the deriver's version changes (`source_sha256`, `version`)."""

    artifact = models.ForeignKey(Artifact, on_delete=models.CASCADE, related_name="derived")
    kind = models.CharField(max_length=16, choices=DerivedKind.choices)
    file = models.FileField(max_length=700, blank=True)
    size = models.PositiveBigIntegerField()
    # Pages read, and whether the budget cut the text short.
    pages = models.PositiveIntegerField(default=0)
    truncated = models.BooleanField(default=False)
    source_sha256 = models.CharField(max_length=64, blank=True, default="")
    version = models.PositiveIntegerField(default=1)
    content = models.TextField(blank=True, default="")
    # Set when the deriver gave up within its budget (e.g. shown as plain text).
    note = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "benchmark_derivedartifact"
        ordering = ["artifact", "kind"]
        constraints = [
            models.UniqueConstraint(fields=["artifact", "kind"], name="derived_artifact_unique"),
            models.CheckConstraint(
                condition=Q(kind__in=DerivedKind.values), name="derived_artifact_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} of {self.artifact}"
