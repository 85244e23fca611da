class BaseMethod:
    """A method predicts f(x) at new points from the noisy training points."""

    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name

    def run(self, train, xs):
        """`train` is a list of (x, y); returns one prediction per x of `xs`."""
        raise NotImplementedError
