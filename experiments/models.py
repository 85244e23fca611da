"""Experiment runs of submitted code, objective tasks and their results, and
reproduction checks of the numbers a paper reports."""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from benchmark.models import Agent, Task
from submissions.models import Submission


class ExperimentPhase(models.TextChoices):
    DEV = "dev", "Dev (objective task, dev data)"
    TEST = "test", "Test (objective task, hidden test data)"
    REPRO = "repro", "Reproduction"


class ExperimentStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    TIMED_OUT = "timed_out", "Timed out"
    CANCELLED = "cancelled", "Cancelled"
    # The code ran to its end but gave no usable score (an MLRC-Bench task's
    # main.py that saved none, or one that is not a finite number).
    COULD_NOT_RUN = "could_not_run", "Could not run"


FINISHED_STATUSES = (
    ExperimentStatus.SUCCEEDED,
    ExperimentStatus.FAILED,
    ExperimentStatus.TIMED_OUT,
    ExperimentStatus.CANCELLED,
    ExperimentStatus.COULD_NOT_RUN,
)


class ExperimentLimit(models.TextChoices):
    """The sandbox limit that killed a run or refused it something."""

    NONE = "", "None"
    WALL_TIME = "wall_time", "Wall time"
    MEMORY = "memory", "Memory"
    PROCESSES = "processes", "Processes"
    DISK = "disk", "Bytes written"


class ExperimentRun(models.Model):
    """One sandboxed run of a submission's code on a GPU worker."""

    submission = models.ForeignKey(
        Submission, on_delete=models.CASCADE, related_name="experiment_runs"
    )
    phase = models.CharField(max_length=8, choices=ExperimentPhase.choices)
    command = models.TextField()
    status = models.CharField(
        max_length=16, choices=ExperimentStatus.choices, default=ExperimentStatus.QUEUED
    )
    gpu_count = models.PositiveSmallIntegerField(default=0, help_text="GPUs the run asks for.")
    time_limit_seconds = models.PositiveIntegerField()
    exit_code = models.IntegerField(null=True, blank=True)
    limit_hit = models.CharField(
        max_length=16, choices=ExperimentLimit.choices, default=ExperimentLimit.NONE, blank=True
    )
    reason = models.TextField(
        blank=True, help_text="Why the run was blocked, killed, cancelled or could not start."
    )
    log = models.FileField(max_length=300, blank=True)
    outputs = models.JSONField(default=list, blank=True)
    metrics = models.JSONField(default=dict, blank=True)
    # The objective task's metric, taken from `metrics` (dev and test runs).
    score = models.FloatField(null=True, blank=True)
    wall_seconds = models.FloatField(null=True, blank=True)
    peak_memory_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    gpus = models.JSONField(default=list, blank=True, help_text="GPU indexes the run was given.")
    worker_host = models.CharField(max_length=200, blank=True)
    cancel_requested = models.BooleanField(default=False)
    # Objective runs: the version of the task they ran on, and the agent's
    # trial they belong to (MLRC-Bench runs several trials per agent and task).
    task_version = models.PositiveIntegerField(null=True, blank=True)
    trial = models.PositiveSmallIntegerField(default=1)
    rerun_of = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="reruns"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # Created by the benchmark app before this app existed; the table keeps its name.
        db_table = "benchmark_experimentrun"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(phase__in=ExperimentPhase.values), name="experiment_phase_valid"
            ),
            models.CheckConstraint(
                condition=Q(status__in=ExperimentStatus.values), name="experiment_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(limit_hit__in=ExperimentLimit.values), name="experiment_limit_valid"
            ),
            models.CheckConstraint(
                condition=Q(time_limit_seconds__gte=1), name="experiment_time_limit_positive"
            ),
            # A finished run says when; a queued one has not started.
            models.CheckConstraint(
                condition=~Q(status__in=FINISHED_STATUSES) | Q(finished_at__isnull=False),
                name="experiment_finished_has_time",
            ),
            models.CheckConstraint(
                condition=~Q(status=ExperimentStatus.RUNNING) | Q(started_at__isnull=False),
                name="experiment_running_has_start",
            ),
        ]
        indexes = [
            models.Index(fields=["submission", "phase"]),
            models.Index(fields=["status"]),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.phase}, {self.status}) of {self.submission}"

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_STATUSES


class ObjectiveFormat(models.TextChoices):
    # The site's own: a method's run.sh, data folders with public/ and private/
    # halves, an evaluation program in a second sandbox.
    SITE = "site", "Site folders (run.sh and an evaluation program)"
    # MLRC-Bench's task folder: env/main.py runs a method of env/methods/ and
    # saves its score; scripts/test_data/ joins env/ for the test phase only.
    MLRC = "mlrc", "MLRC-Bench task folder"


class TestPhase(models.TextChoices):
    LOCAL = "local", "Local (scripts/test_data, run on a gpu worker)"
    # MLRC-Bench tasks whose test set is scored elsewhere (machine_unlearning):
    # organisers record the score with its source.
    EXTERNAL = "external", "External (scored elsewhere, recorded by organisers)"


class TestFolder(models.TextChoices):
    """Where an MLRC-Bench task's test phase runs. MLRC-Bench's README (and its
    launch script) run it in the env/ folder the dev phase left, after `cp -r
    ../scripts/test_data/* data/`; the site's default is a fresh copy of env/."""

    FRESH = "fresh", "A fresh copy of env/ (the site's default)"
    DEV_LEFT = "dev-left", "The folder the dev phase left (MLRC-Bench's README)"


class EnvironmentStatus(models.TextChoices):
    MISSING = "missing", "Missing"
    BUILDING = "building", "Building"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class TaskEnvironment(models.Model):
    """A Python virtual environment for objective task versions, one per
    requirements hash (versions with the same requirements share it), built on
    the host with pip and mounted read-only in the sandbox."""

    spec_sha256 = models.CharField(max_length=64, unique=True)
    requirements = models.JSONField(default=list)
    base_python = models.CharField(max_length=300)
    # `sys.version` of base_python, as the build found it (e.g. "3.11.2").
    python_version = models.CharField(max_length=40, blank=True)
    path = models.CharField(max_length=500, help_text="The virtual environment's folder.")
    status = models.CharField(
        max_length=16, choices=EnvironmentStatus.choices, default=EnvironmentStatus.MISSING
    )
    # `pip freeze` of the built environment.
    packages = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    build_seconds = models.FloatField(null=True, blank=True)
    size_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    built_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=EnvironmentStatus.values),
                name="task_environment_status_valid",
            ),
            # A ready environment says what it holds and when it was built.
            models.CheckConstraint(
                condition=~Q(status=EnvironmentStatus.READY) | Q(built_at__isnull=False),
                name="task_environment_ready_is_built",
            ),
        ]

    def __str__(self) -> str:
        return f"environment {self.spec_sha256[:12]} ({self.status})"

    @property
    def python(self) -> str:
        return f"{self.path}/bin/python"


class ObjectiveTask(models.Model):
    """What makes a task of kind `objective` scoreable: MLRC-Bench's protocol.

    Site format: the data folders and the evaluation program are the
    organiser's: each data folder holds `public/` (what the method sees, at
    /data) and `private/` (labels only the evaluation sees, at /private).
    MLRC format: `dev_data_dir` is the task version's copy of `env/` and
    `test_data_dir` its copy of `scripts/test_data/`.
    """

    task = models.OneToOneField(Task, on_delete=models.CASCADE, related_name="objective")
    metric = models.CharField(max_length=100)
    higher_is_better = models.BooleanField()
    baseline_score = models.FloatField()
    human_score = models.FloatField(help_text="The top human score, 100% relative improvement.")
    method_command = models.CharField(
        max_length=500, default="sh run.sh", help_text="How the method code is run, in /work."
    )
    eval_command = models.TextField(help_text="Run in a second sandbox; writes metrics.json.")
    eval_dir = models.CharField(
        max_length=500, blank=True, help_text="Folder of the evaluation program, at /task."
    )
    dev_data_dir = models.CharField(max_length=500)
    test_data_dir = models.CharField(max_length=500)
    time_limit_seconds = models.PositiveIntegerField(default=600)
    gpu_count = models.PositiveSmallIntegerField(default=0)
    format = models.CharField(
        max_length=8, choices=ObjectiveFormat.choices, default=ObjectiveFormat.SITE
    )
    version = models.PositiveIntegerField(
        default=1, help_text="Raised each time the imported task folder changes."
    )
    source_sha256 = models.CharField(
        max_length=64, blank=True, help_text="Digest of the imported task folder."
    )
    read_only_files = models.JSONField(
        default=list, blank=True, help_text="Paths under env/ (globs) methods may not change."
    )
    baseline_method = models.CharField(max_length=100, default="my_method")
    baseline_runtime_seconds = models.FloatField(null=True, blank=True)
    # Files (globs under env/, the test data once in data/) only the scoring
    # step sees: a method never reads its phase's labels.
    label_files = models.JSONField(default=list, blank=True)
    # The metric's possible range: a score outside it is refused.
    metric_min = models.FloatField(null=True, blank=True)
    metric_max = models.FloatField(null=True, blank=True)
    test_phase = models.CharField(max_length=8, choices=TestPhase.choices, default=TestPhase.LOCAL)
    # The current version's requirements (each version's are also kept in its
    # folder's environment.json); empty: the host's Python, no packages.
    environment_requirements = models.JSONField(default=list, blank=True)
    # MLRC-Bench's ALL_BASE_PERFORMANCE[task]["dev"]: its improvement_perc on dev
    # divides by the dev baseline (`baseline_score` is the test phase's).
    dev_baseline_score = models.FloatField(null=True, blank=True)
    # The forged-label check at import: whether the task's get_score follows label
    # columns the method itself writes (None: not checked), and what it found.
    scoring_forgeable = models.BooleanField(null=True, blank=True)
    scoring_check = models.TextField(blank=True)
    # The interpreter the environment file asks for (conda's `python=3.10`;
    # blank: any): honoured where the host has it, else the build says which.
    environment_python = models.CharField(max_length=20, blank=True)
    test_folder = models.CharField(
        max_length=8, choices=TestFolder.choices, default=TestFolder.FRESH
    )
    # The dev phase has scripts/test_data/ (less its labels) beside env/, as in
    # MLRC-Bench's launch: for tasks whose dev phase reads it (Causality
    # Discovery's evaluate_model reads ../scripts/test_data/ in both phases).
    dev_sees_test_data = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # Created by the benchmark app before this app existed; the table keeps its name.
        db_table = "benchmark_objectivetask"
        ordering = ["task__slug"]
        constraints = [
            # The top human must beat the baseline in the metric's direction,
            # or relative improvement means nothing.
            models.CheckConstraint(
                condition=Q(higher_is_better=True, human_score__gt=F("baseline_score"))
                | Q(higher_is_better=False, human_score__lt=F("baseline_score")),
                name="objective_human_beats_baseline",
            ),
            models.CheckConstraint(condition=~Q(metric=""), name="objective_metric_not_empty"),
            models.CheckConstraint(
                condition=~Q(dev_data_dir=F("test_data_dir")), name="objective_dev_is_not_test"
            ),
            models.CheckConstraint(
                condition=Q(format__in=ObjectiveFormat.values), name="objective_format_valid"
            ),
            models.CheckConstraint(
                condition=Q(test_phase__in=TestPhase.values), name="objective_test_phase_valid"
            ),
            models.CheckConstraint(
                condition=Q(test_folder__in=TestFolder.values), name="objective_test_folder_valid"
            ),
            models.CheckConstraint(
                condition=Q(metric_min__isnull=True)
                | Q(metric_max__isnull=True)
                | Q(metric_min__lt=F("metric_max")),
                name="objective_metric_range_ordered",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task.slug} ({self.metric})"

    def relative_improvement(self, score: float) -> float:
        """(agent - baseline) / (human - baseline) x 100; the constraint keeps the
        sign right for both directions."""
        return (score - self.baseline_score) / (self.human_score - self.baseline_score) * 100

    def better(self, a: float, b: float) -> bool:
        return a > b if self.higher_is_better else a < b

    @property
    def is_mlrc(self) -> bool:
        return self.format == ObjectiveFormat.MLRC

    @property
    def test_phase_is_external(self) -> bool:
        return self.test_phase == TestPhase.EXTERNAL


class ObjectiveResult(models.Model):
    """One trial of an agent on one version of an objective task: its best dev
    run, and the one evaluation of that method on the test data."""

    objective = models.ForeignKey(ObjectiveTask, on_delete=models.CASCADE, related_name="results")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="objective_results")
    dev_run = models.ForeignKey(ExperimentRun, on_delete=models.PROTECT, related_name="+")
    # None for a test phase scored elsewhere (`test_score_source` says where).
    test_run = models.OneToOneField(
        ExperimentRun,
        on_delete=models.PROTECT,
        related_name="objective_result",
        null=True,
        blank=True,
    )
    test_score = models.FloatField(null=True, blank=True)
    test_score_source = models.CharField(max_length=500, blank=True)
    # MLRC-Bench's configuration: where the method's idea came from (none,
    # human, agent, or a label such as coi), from the archive's idea_source.txt.
    idea_source = models.CharField(max_length=40, default="none")
    relative_improvement = models.FloatField(null=True, blank=True)
    runtime_seconds = models.FloatField(null=True, blank=True)
    lloc = models.PositiveIntegerField(help_text="Logical lines of code of the method.")
    trial = models.PositiveSmallIntegerField(default=1)
    task_version = models.PositiveIntegerField(default=1)
    # As MLRC-Bench reports them: the method against the baseline method.
    baseline_lloc = models.PositiveIntegerField(null=True, blank=True)
    runtime_change_percent = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # Created by the benchmark app before this app existed; the table keeps its name.
        db_table = "benchmark_objectiveresult"
        ordering = ["objective", "-relative_improvement"]
        constraints = [
            # Evaluated once on test: one result per agent, trial and task version.
            models.UniqueConstraint(
                fields=["objective", "agent", "trial", "task_version"],
                name="objective_result_once",
            ),
            # A score comes from a test run here, or from a named source elsewhere.
            models.CheckConstraint(
                condition=Q(test_run__isnull=False) | ~Q(test_score_source=""),
                name="objective_result_has_test_source",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.agent} on {self.objective}"

    @property
    def lloc_change_percent(self) -> float | None:
        if not self.baseline_lloc:
            return None
        return (self.lloc - self.baseline_lloc) / self.baseline_lloc * 100


class ReproductionVerdict(models.TextChoices):
    REPRODUCED = "reproduced", "Reproduced"
    NOT_REPRODUCED = "not_reproduced", "Not reproduced"
    COULD_NOT_RUN = "could_not_run", "Could not run"


class ReproductionCheck(models.Model):
    """Whether a `repro` run produced the numbers the paper and results report.

    `evidence` is a list of {claimed, claimed_text, claimed_where, closest,
    closest_where, matched}, the unmatched claims first.
    """

    run = models.OneToOneField(ExperimentRun, on_delete=models.CASCADE, related_name="reproduction")
    verdict = models.CharField(max_length=16, choices=ReproductionVerdict.choices)
    summary = models.TextField()
    evidence = models.JSONField(default=list, blank=True)
    tolerance = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # Created by the benchmark app before this app existed; the table keeps its name.
        db_table = "benchmark_reproductioncheck"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(verdict__in=ReproductionVerdict.values),
                name="reproduction_verdict_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.verdict} ({self.run})"
