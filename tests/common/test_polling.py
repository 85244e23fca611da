"""The one polling loop: done as soon as the check answers, the time limit kept
on a clock the test drives (no real waits)."""

from common.polling import poll_until


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_it_returns_the_first_answer_and_waits_between_asks():
    clock, answers = Clock(), iter([None, None, "done"])
    assert (
        poll_until(lambda: next(answers), every=0.5, sleep=clock.sleep, clock=lambda: clock.now)
        == "done"
    )
    assert clock.slept == [0.5, 0.5]


def test_it_gives_up_at_the_deadline_after_asking_at_least_once():
    clock, asked = Clock(), []

    def check() -> None:
        asked.append(clock.now)

    assert poll_until(check, every=1, timeout=3, sleep=clock.sleep, clock=lambda: clock.now) is None
    assert asked == [0, 1, 2, 3]
    assert poll_until(check, every=1, timeout=0, sleep=clock.sleep, clock=lambda: clock.now) is None
    assert len(asked) == 5


def test_a_false_answer_is_an_answer():
    assert poll_until(lambda: False, every=60) is False
