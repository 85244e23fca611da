"""Agreement of two yes/no raters (a share's Wilson interval: common.stats)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BinaryAgreement:
    """A detector's yes/no against a reference's yes/no on the same `n` items."""

    n: int
    true_positive: int
    false_positive: int
    false_negative: int
    true_negative: int

    @property
    def precision(self) -> float | None:
        called = self.true_positive + self.false_positive
        return self.true_positive / called if called else None

    @property
    def recall(self) -> float | None:
        actual = self.true_positive + self.false_negative
        return self.true_positive / actual if actual else None

    @property
    def f1(self) -> float | None:
        precision, recall = self.precision, self.recall
        if precision is None or recall is None or precision + recall == 0:
            return None if precision is None or recall is None else 0.0
        return 2 * precision * recall / (precision + recall)

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa; None when chance agreement is total (both raters constant
        and equal), where kappa is undefined."""
        if not self.n:
            return None
        n = self.n
        observed = (self.true_positive + self.true_negative) / n
        yes = ((self.true_positive + self.false_positive) / n) * (
            (self.true_positive + self.false_negative) / n
        )
        no = ((self.false_negative + self.true_negative) / n) * (
            (self.false_positive + self.true_negative) / n
        )
        expected = yes + no
        if expected >= 1:
            return None
        return (observed - expected) / (1 - expected)


def binary_agreement(pairs: list[tuple[bool, bool]]) -> BinaryAgreement:
    """(detector, reference) pairs counted into a confusion table."""
    tp = sum(1 for d, r in pairs if d and r)
    fp = sum(1 for d, r in pairs if d and not r)
    fn = sum(1 for d, r in pairs if not d and r)
    return BinaryAgreement(len(pairs), tp, fp, fn, len(pairs) - tp - fp - fn)
