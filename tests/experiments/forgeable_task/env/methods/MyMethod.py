from methods.BaseMethod import BaseMethod


class MyMethod(BaseMethod):
    def run(self, xs):
        return [1 for _ in xs]
