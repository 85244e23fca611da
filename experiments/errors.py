"""Why an experiment request is refused (the site's one error type, `common.errors`)."""

from common.errors import Conflict, ErrorItem, ValidationFailed


class ExperimentRefused(Conflict):
    """A run cannot be queued, cancelled or re-run as things stand; the message says why."""

    default_code = "experiment_refused"


class ObjectiveTaskInvalid(ValidationFailed):
    """An objective task definition is refused; `problems` names each problem."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(
            items=[ErrorItem(code="invalid_objective_task", message=p) for p in problems]
        )


class EnvironmentInvalid(ValidationFailed):
    """A task's environment file cannot be read, or its build failed; `problems` says why."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(items=[ErrorItem(code="invalid_environment", message=p) for p in problems])
