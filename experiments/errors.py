"""Why an experiment request is refused."""


class ExperimentRefused(Exception):
    """A run cannot be queued, cancelled or re-run; the message says why."""


class ObjectiveTaskInvalid(Exception):
    """An objective task definition is refused; `problems` names each problem."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))
