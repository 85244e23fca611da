"""The benchmark's tables, one module per concept: the task catalogue,
agents with their submissions and artifacts, and users' API tokens.
Experiment runs live in the `experiments` app."""

from .accounts import ApiToken
from .catalogue import OBJECTIVE_SLUG_PATTERN, TASK_SLUG_PATTERN, Conference, Task, TaskKind, Topic
from .prices import ModelPrice
from .submissions import (
    Agent,
    Artifact,
    ArtifactKind,
    DerivedArtifact,
    DerivedKind,
    ModelFamily,
    Stage,
    Submission,
    SubmissionInput,
    SubmissionSource,
    SubmissionStatus,
    Team,
)

__all__ = [
    "OBJECTIVE_SLUG_PATTERN",
    "TASK_SLUG_PATTERN",
    "ApiToken",
    "Agent",
    "Artifact",
    "ArtifactKind",
    "DerivedArtifact",
    "DerivedKind",
    "Conference",
    "DerivedArtifact",
    "DerivedKind",
    "ModelFamily",
    "ModelPrice",
    "Stage",
    "Submission",
    "SubmissionInput",
    "SubmissionSource",
    "SubmissionStatus",
    "Task",
    "TaskKind",
    "Team",
    "Topic",
]
