"""The benchmark's tables, one module per concept: the task catalogue,
agents with their submissions and artifacts, users' API tokens, and
experiment runs."""

from .accounts import ApiToken
from .catalogue import TASK_SLUG_PATTERN, Conference, Task, TaskKind, Topic
from .experiments import (
    FINISHED_STATUSES,
    ExperimentLimit,
    ExperimentPhase,
    ExperimentRun,
    ExperimentStatus,
    ObjectiveResult,
    ObjectiveTask,
    ReproductionCheck,
    ReproductionVerdict,
)
from .submissions import (
    Agent,
    Artifact,
    ArtifactKind,
    ModelFamily,
    Stage,
    Submission,
    SubmissionSource,
    SubmissionStatus,
    Team,
)

__all__ = [
    "FINISHED_STATUSES",
    "TASK_SLUG_PATTERN",
    "ApiToken",
    "Agent",
    "Artifact",
    "ArtifactKind",
    "Conference",
    "ExperimentLimit",
    "ExperimentPhase",
    "ExperimentRun",
    "ExperimentStatus",
    "ModelFamily",
    "ObjectiveResult",
    "ObjectiveTask",
    "ReproductionCheck",
    "ReproductionVerdict",
    "Stage",
    "Submission",
    "SubmissionSource",
    "SubmissionStatus",
    "Task",
    "TaskKind",
    "Team",
    "Topic",
]
