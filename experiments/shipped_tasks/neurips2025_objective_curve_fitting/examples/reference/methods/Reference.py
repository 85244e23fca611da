import math

from methods.BaseMethod import BaseMethod


class Reference(BaseMethod):
    """The human reference: locally linear kernel regression, with the bandwidth
    chosen by leave-one-out error on the training data."""

    BANDWIDTHS = (0.04, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2)

    def predict(self, train, x, bandwidth, skip=None):
        s0 = s1 = s2 = t0 = t1 = 0.0
        for index, (xi, yi) in enumerate(train):
            if index == skip:
                continue
            w = math.exp(-0.5 * ((xi - x) / bandwidth) ** 2)
            d = xi - x
            s0, s1, s2 = s0 + w, s1 + w * d, s2 + w * d * d
            t0, t1 = t0 + w * yi, t1 + w * d * yi
        return (s2 * t0 - s1 * t1) / (s0 * s2 - s1 * s1)

    def run(self, train, xs):
        def loo_error(bandwidth):
            return sum(
                (self.predict(train, x, bandwidth, i) - y) ** 2 for i, (x, y) in enumerate(train)
            )

        bandwidth = min(self.BANDWIDTHS, key=loo_error)
        return [self.predict(train, x, bandwidth) for x in xs]
