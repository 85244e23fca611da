"""MLRC-Bench's `MLAgentBench.schema`: the exception its tools raise."""


class EnvException(Exception):
    def __init__(self, message):
        super().__init__(message)
        self.message = message

    def __str__(self):
        return self.message
