"""MLR-Agent runs on the site: one run per task with its configuration, and one
checkpoint row per stage. The rows are the truth; Celery messages only say
"look at this run now"."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from benchmark.models import Agent, Task
from common.llm_policy import destination_errors
from submissions.models import Stage, Submission


class RunMode(models.TextChoices):
    END2END = "end2end", "End to end"
    STEPWISE = "stepwise", "Stepwise (one stage)"


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


FINAL_STATUSES = (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.CANCELLED)


class StageName(models.TextChoices):
    """The agent's steps, in order (literature review is `lit`, MLR-Bench's file name)."""

    IDEA = "idea", "Idea"
    LIT = "lit", "Literature review"
    PROPOSAL = "proposal", "Proposal"
    EXPERIMENT = "experiment", "Experiment"
    PAPER = "paper", "Paper"
    STORE = "store", "Store as a submission"


class StageStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"
    SKIPPED = "skipped", "Skipped"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


DONE_STAGE_STATUSES = (StageStatus.FINISHED, StageStatus.SKIPPED)
# The stages a stepwise run may produce (a benchmark stage of the same name).
STEPWISE_STAGES = (Stage.IDEA, Stage.PROPOSAL, Stage.EXPERIMENT, Stage.PAPER)


class AgentRun(models.Model):
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="agent_runs")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="agent_runs")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    mode = models.CharField(max_length=16, choices=RunMode.choices, default=RunMode.END2END)
    # Stepwise: the benchmark stage produced (idea, proposal, experiment, paper).
    stage = models.CharField(max_length=16, blank=True, default="")
    # The idea, proposal and paper model; the literature review's ("" = no review)
    # and the coding loop's (by default the main one).
    model = models.CharField(max_length=200)
    lit_model = models.CharField(max_length=200, blank=True, default="")
    coding_model = models.CharField(max_length=200)
    api_base = models.CharField(max_length=500, blank=True, default="")
    # The NAME of the environment variable holding the key, never the key.
    api_key_env = models.CharField(max_length=100, blank=True, default="")
    max_steps = models.PositiveIntegerField(default=50)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    max_cost_usd = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    seed = models.IntegerField(default=0)
    # Stepwise inputs: submission ids given or sampled (with the seed).
    input_ids = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    # Tokens of calls no price table knows: the cost so far is then a lower bound.
    unpriced_calls = models.PositiveIntegerField(default=0)
    submission = models.OneToOneField(
        Submission, on_delete=models.SET_NULL, null=True, blank=True, related_name="agent_run"
    )
    # Why it failed or was cancelled, and at which stage.
    reason = models.TextField(blank=True, default="")
    failed_stage = models.CharField(max_length=16, blank=True, default="")
    cancel_requested = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(mode__in=RunMode.values), name="agentrun_mode"),
            models.CheckConstraint(
                condition=Q(status__in=RunStatus.values), name="agentrun_status"
            ),
            models.CheckConstraint(
                condition=(Q(mode=RunMode.END2END, stage="") | Q(mode=RunMode.STEPWISE))
                & (~Q(mode=RunMode.STEPWISE) | Q(stage__in=STEPWISE_STAGES)),
                name="agentrun_stage_matches_mode",
            ),
            models.CheckConstraint(condition=Q(max_steps__gte=1), name="agentrun_max_steps"),
            models.CheckConstraint(
                condition=Q(max_tokens__isnull=True) | Q(max_tokens__gte=1),
                name="agentrun_max_tokens",
            ),
            models.CheckConstraint(
                condition=Q(max_cost_usd__isnull=True) | Q(max_cost_usd__gt=0),
                name="agentrun_max_cost",
            ),
            models.CheckConstraint(condition=~Q(model=""), name="agentrun_model"),
            models.CheckConstraint(condition=~Q(coding_model=""), name="agentrun_coding_model"),
            # Only a finished run has a submission, and every finished run has one.
            models.CheckConstraint(
                condition=Q(status=RunStatus.FINISHED, submission__isnull=False)
                | (~Q(status=RunStatus.FINISHED) & Q(submission__isnull=True)),
                name="agentrun_submission_iff_finished",
            ),
        ]

    def __str__(self) -> str:
        return f"agent run {self.pk} ({self.agent} on {self.task})"

    def clean(self) -> None:
        super().clean()
        # Where the key and the calls may go (common.llm_policy); checked again before
        # each call, since the settings may change while the run waits.
        models = [self.model, self.coding_model, self.lit_model]
        if problems := destination_errors(
            models=[name for name in models if name],
            api_base=self.api_base,
            api_key_env=self.api_key_env,
        ):
            raise ValidationError(problems)

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_STATUSES


class AgentRunStage(models.Model):
    """One stage's checkpoint: once finished (or skipped) it is never run again."""

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="stages")
    name = models.CharField(max_length=16, choices=StageName.choices)
    position = models.PositiveSmallIntegerField()
    status = models.CharField(
        max_length=16, choices=StageStatus.choices, default=StageStatus.PENDING
    )
    # Who holds a running stage, and when it last said it was alive.
    run_token = models.CharField(max_length=32, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    # How the stage ended (`finish`, `max_steps`, `no literature review`, ...) or why it failed.
    note = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "name"], name="agentrunstage_unique"),
            models.UniqueConstraint(fields=["run", "position"], name="agentrunstage_position"),
            models.CheckConstraint(
                condition=Q(name__in=StageName.values), name="agentrunstage_name"
            ),
            models.CheckConstraint(
                condition=Q(status__in=StageStatus.values), name="agentrunstage_status"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.name}: {self.status}"
