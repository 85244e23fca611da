"""The benchmark's tables, one module per concept: the task catalogue, teams
and agents, users' API tokens and the organisers' model prices. Submissions live
in the `submissions` app, experiment runs in the `experiments` app."""

from .accounts import ApiToken
from .agents import Agent, ModelFamily, Team
from .catalogue import OBJECTIVE_SLUG_PATTERN, TASK_SLUG_PATTERN, Conference, Task, TaskKind, Topic
from .prices import ModelPrice

__all__ = [
    "OBJECTIVE_SLUG_PATTERN",
    "TASK_SLUG_PATTERN",
    "Agent",
    "ApiToken",
    "Conference",
    "ModelFamily",
    "ModelPrice",
    "Task",
    "TaskKind",
    "Team",
    "Topic",
]
