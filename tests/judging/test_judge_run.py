"""One judgment, run in-process against the loopback server (litellm for real):
the scripted answers of the issue, each ending `done` with every score or
`failed` with a reason, never with some scores missing."""

import threading

import pytest
from django.db import connection

from judging.models import (
    DimensionScore,
    JudgingCondition,
    Judgment,
    JudgmentStatus,
    SubmissionJudgingState,
)
from judging.selectors import submission_judging_state
from judging.services.queue import judgments_reap_stuck
from judging.services.run import judgment_run
from tests.support.fake_llm import answer, error

from .conftest import end2end_submission
from .helpers import review_answer

pytestmark = pytest.mark.django_db

END2END_DIMENSIONS = {"Clarity", "Novelty", "Soundness", "Significance", "Overall"}


@pytest.fixture
def judgment(submission, rubrics, judge_for):
    return Judgment.objects.create(
        submission=submission, judge=judge_for("judge-a"), rubric=rubrics["end2end"]
    )


def run(judgment) -> Judgment:
    judgment_run(judgment_id=judgment.pk)
    judgment.refresh_from_db()
    return judgment


def scores_of(judgment) -> dict:
    return {s.dimension: s.score for s in judgment.scores.all()}


def test_a_valid_answer_is_recorded_in_full(judgment, fake_llm):
    fake_llm.script(answer(review_answer("end2end", score=6, overall=7, confidence=4)))

    judgment = run(judgment)

    assert judgment.status == JudgmentStatus.DONE
    assert scores_of(judgment) == {
        "Clarity": 6,
        "Novelty": 6,
        "Soundness": 6,
        "Significance": 6,
        "Overall": 7,
    }
    assert judgment.scores.get(dimension="Clarity").justification == "Clarity justification."
    assert judgment.strengths == ["Clear motivation", "Runs end to end"]
    assert judgment.weaknesses == ["Small evaluation"]
    assert judgment.confidence == 4
    assert judgment.has_hallucination is False
    assert (judgment.input_tokens, judgment.output_tokens) == (1200, 300)
    assert judgment.cost_usd is None  # the test model has no price
    assert judgment.attempts == 1
    assert len(judgment.prompt_sha256) == 64
    assert judgment.raw_response.startswith("{")
    assert judgment.latency_seconds is not None and judgment.finished_at is not None
    assert judgment.error == ""
    # The only active judge is done: the submission is judged.
    assert (
        submission_judging_state(submission_id=judgment.submission.pk)
        == SubmissionJudgingState.JUDGED
    )


def test_json_in_a_code_fence_is_accepted(judgment, fake_llm):
    fake_llm.script(answer("Sure.\n```json\n" + review_answer("end2end") + "\n```"))

    assert run(judgment).status == JudgmentStatus.DONE


def test_a_missing_dimension_is_asked_again_telling_the_model_what_was_wrong(judgment, fake_llm):
    fake_llm.script(
        answer(review_answer("end2end", drop=("Soundness",))),
        answer(review_answer("end2end", score=5)),
    )

    judgment = run(judgment)

    assert judgment.status == JudgmentStatus.DONE
    assert set(scores_of(judgment)) == END2END_DIMENSIONS
    assert judgment.attempts == 2
    reask = fake_llm.requests[1].messages
    assert reask[-2]["role"] == "assistant"
    assert '"Soundness" is missing' in reask[-1]["content"]


def test_a_score_of_11_every_time_fails_with_the_reason_and_no_scores(judgment, fake_llm):
    bad = review_answer("end2end", Overall={"score": 11, "strengths": [], "weaknesses": []})
    fake_llm.default = answer(bad)

    judgment = run(judgment)

    assert judgment.status == JudgmentStatus.FAILED
    assert "not usable after 3 tries" in judgment.error
    assert '"Overall" score 11 is outside 1-10' in judgment.error
    assert not DimensionScore.objects.filter(judgment=judgment).exists()
    assert len(fake_llm.requests) == 3  # one ask and JUDGE_MAX_REASKS = 2 re-asks
    assert judgment.raw_response == bad


def test_prose_instead_of_json_fails_after_the_re_asks(judgment, fake_llm):
    fake_llm.default = answer("This is a fine paper. I would give it a seven.")

    judgment = run(judgment)

    assert judgment.status == JudgmentStatus.FAILED
    assert "not a JSON object" in judgment.error
    assert judgment.scores.count() == 0


def test_429_then_success_is_retried(judgment, fake_llm):
    fake_llm.script(error(429, "rate limit"), answer(review_answer("end2end")))

    judgment = run(judgment)

    assert judgment.status == JudgmentStatus.DONE
    assert judgment.attempts == 2
    assert len(fake_llm.requests) == 2


def test_500_every_time_gives_up_after_the_retries(judgment, fake_llm):
    fake_llm.default = error(500, "upstream exploded")

    judgment = run(judgment)

    assert judgment.status == JudgmentStatus.FAILED
    assert judgment.error.startswith("gave up after 3 attempts: server error")
    assert "upstream exploded" in judgment.error
    assert len(fake_llm.requests) == 3
    assert judgment.attempts == 3


def test_an_answer_slower_than_the_timeout_fails_as_timed_out(
    submission, rubrics, judge_for, fake_llm
):
    judge = judge_for("slow-judge", timeout_seconds=0.3)
    judgment = Judgment.objects.create(
        submission=submission, judge=judge, rubric=rubrics["end2end"]
    )
    fake_llm.default = answer(review_answer("end2end"), delay=3)

    judgment = run(judgment)

    assert judgment.status == JudgmentStatus.FAILED
    assert "no answer from" in judgment.error and "within 0.3 s" in judgment.error
    assert len(fake_llm.requests) == 3


def test_a_closed_port_fails_as_unreachable(submission, rubrics, closed_port):
    from .factories import JudgeFactory

    judge = JudgeFactory(name="gone", api_base=f"http://127.0.0.1:{closed_port}/v1")
    judgment = Judgment.objects.create(
        submission=submission, judge=judge, rubric=rubrics["end2end"]
    )

    judgment = run(judgment)

    assert judgment.status == JudgmentStatus.FAILED
    assert "could not connect" in judgment.error
    assert judgment.attempts == 3


@pytest.mark.parametrize(
    ("behaviour", "says"),
    [
        (error(401, "Incorrect API key"), "refused the API key"),
        (error(400, "This model's maximum context length is 8192 tokens"), "context window"),
    ],
)
def test_errors_retrying_cannot_fix_fail_at_once(judgment, fake_llm, behaviour, says):
    fake_llm.default = behaviour

    judgment = run(judgment)

    assert judgment.status == JudgmentStatus.FAILED
    assert says in judgment.error and "not retried" in judgment.error
    assert len(fake_llm.requests) == 1


def test_a_second_delivery_of_the_same_message_does_nothing(judgment, fake_llm):
    fake_llm.default = answer(review_answer("end2end"))

    assert judgment_run(judgment_id=judgment.pk) is not None
    assert judgment_run(judgment_id=judgment.pk) is None

    assert len(fake_llm.requests) == 1
    assert Judgment.objects.filter(submission=judgment.submission).count() == 1
    assert judgment.scores.count() == 5


def test_a_submission_without_a_paper_fails_with_a_clear_reason(rubrics, judge_for, fake_llm):
    from .factories import SubmissionFactory

    judgment = Judgment.objects.create(
        submission=SubmissionFactory(), judge=judge_for("judge-a"), rubric=rubrics["end2end"]
    )

    judgment = run(judgment)

    assert judgment.status == JudgmentStatus.FAILED
    assert (
        judgment.error
        == "cannot judge this submission: the submission has no paper artifact to review"
    )
    assert fake_llm.requests == []


@pytest.mark.django_db(transaction=True)
def test_a_run_given_up_for_dead_cannot_write_over_the_run_that_replaced_it(fake_llm, judge_for):
    """The reaper requeues a judgment whose first run is still hanging; the second
    run finishes; when the first finally gets its answer, it writes nothing."""
    from judging.services.rubrics import ensure_default_rubrics

    ensure_default_rubrics()
    submission = end2end_submission()
    from judging.models import Rubric

    judgment = Judgment.objects.create(
        submission=submission,
        judge=judge_for("judge-a"),
        rubric=Rubric.objects.get(stage="end2end", kind="score", version=1),
    )
    fake_llm.script(
        answer(review_answer("end2end", overall=2), delay=2.0),  # the first run hangs
        answer(review_answer("end2end", overall=9)),
    )

    def first_run():
        try:
            judgment_run(judgment_id=judgment.pk)
        finally:
            connection.close()

    thread = threading.Thread(target=first_run)
    thread.start()
    assert fake_llm.wait_for_requests(1)
    assert judgments_reap_stuck(older_than=0) == [judgment.pk]
    second = judgment_run(judgment_id=judgment.pk)
    assert second.status == JudgmentStatus.DONE
    thread.join()

    judgment.refresh_from_db()
    assert judgment.status == JudgmentStatus.DONE
    assert scores_of(judgment)["Overall"] == 9
    assert judgment.scores.count() == 5
    assert Judgment.objects.filter(submission=submission).count() == 1


def test_no_code_judgments_do_not_decide_whether_a_submission_is_judged(
    submission, rubrics, judge_for, fake_llm
):
    judge = judge_for("judge-a")
    no_code = Judgment.objects.create(
        submission=submission,
        judge=judge,
        rubric=rubrics["end2end"],
        condition=JudgingCondition.NO_CODE,
    )
    fake_llm.default = answer(review_answer("end2end"))

    run(no_code)

    # Judged without code only: the default condition has no judgment yet.
    assert submission_judging_state(submission_id=submission.pk) == SubmissionJudgingState.READY
    assert "Not provided: judge the paper alone." in fake_llm.requests[0].messages[1]["content"]


@pytest.mark.parametrize("outcome", ["done", "failed"])
def test_a_finished_judgment_makes_the_cached_leaderboard_stale(
    judgment, fake_llm, django_capture_on_commit_callbacks, outcome
):
    from leaderboard.caching import data_version

    fake_llm.default = (
        answer(review_answer("end2end")) if outcome == "done" else error(401, "bad key")
    )
    before = data_version()
    with django_capture_on_commit_callbacks(execute=True):
        assert run(judgment).status == outcome
    # The run writes with single statements (no model signals): its own signal
    # bumps the version, so the next leaderboard request is computed afresh.
    assert data_version() > before


def test_a_run_waits_for_a_call_slot_and_fails_clearly_when_none_comes_free(
    judgment, fake_llm, settings
):
    from judging.callslots import call_slot

    settings.JUDGE_CALLS_PER_PROCESS = 1
    settings.JUDGE_TASK_SOFT_TIME_LIMIT = 2
    fake_llm.default = answer(review_answer("end2end"))

    with call_slot(timeout=1):  # another thread's call holds this process's only slot
        judgment = run(judgment)

    assert judgment.status == JudgmentStatus.FAILED
    assert "no call slot came free" in judgment.error
    assert "JUDGE_CALLS_PER_PROCESS" in judgment.error
    assert fake_llm.requests == []  # nothing was sent
    assert not judgment.scores.exists()

    # Once the slot is free, the judgment runs again to the end.
    Judgment.objects.filter(pk=judgment.pk).update(status=JudgmentStatus.QUEUED, run_token=None)
    assert run(judgment).status == JudgmentStatus.DONE


@pytest.mark.django_db(transaction=True)
def test_calls_that_waited_for_a_slot_never_exceed_the_judges_limit_in_any_window(
    rubrics, judge_for, fake_llm, settings
):
    """The judge's turn is counted only once the call holds its slot: two runs that
    wait for this process's one slot, under a limit of 1 call per 2 s, reach the
    provider at least a window apart (counting the turn before the slot wait let
    both through together, and the provider answered 429)."""
    from judging.callslots import call_slot
    from judging.ratelimit import window

    settings.JUDGE_CALLS_PER_PROCESS = 1
    settings.JUDGE_RATE_WINDOW_SECONDS = 2.0
    fake_llm.default = answer(review_answer("end2end"))
    fake_llm.rate_limit(1, window=2.0)
    judge = judge_for("judge-a", requests_per_minute=1)
    window().reset(str(judge.pk))
    judgments = [
        Judgment.objects.create(
            submission=end2end_submission(task_slug=f"iclr2025_window{n}"),
            judge=judge,
            rubric=rubrics["end2end"],
        )
        for n in range(2)
    ]

    def run_in_thread(judgment: Judgment) -> None:
        try:
            judgment_run(judgment_id=judgment.pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=run_in_thread, args=(j,)) for j in judgments]
    with call_slot(timeout=1):  # another call holds the slot while both runs start
        for thread in threads:
            thread.start()
        threading.Event().wait(2.5)
    for thread in threads:
        thread.join(timeout=60)

    assert [Judgment.objects.get(pk=j.pk).status for j in judgments] == [JudgmentStatus.DONE] * 2
    assert fake_llm.refused == 0
    assert fake_llm.most_in_window == 1
    arrivals = sorted(request.at for request in fake_llm.requests)
    assert arrivals[1] - arrivals[0] >= 2.0


def test_a_local_server_judge_without_a_key_variable_scores_through_litellm(
    submission, rubrics, judge_for, fake_llm, monkeypatch
):
    # An OpenAI-compatible server that needs no key (Ollama, vLLM, llama.cpp's server).
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    judge = judge_for("local-qwen", model="openai/qwen3:32b", api_key_env="")
    judgment = Judgment.objects.create(
        submission=submission, judge=judge, rubric=rubrics["end2end"]
    )
    fake_llm.script(answer(review_answer("end2end", overall=7)))

    judgment = run(judgment)

    assert judgment.status == JudgmentStatus.DONE, judgment.error
    assert scores_of(judgment)["Overall"] == 7
    assert fake_llm.requests[0].model == "qwen3:32b"
    # A placeholder, never a provider key taken from the environment.
    assert fake_llm.requests[0].headers["authorization"] == "Bearer no-key-needed"


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        # The provider's own server and no key anywhere: the SDK refuses to call.
        ({"model": "openai/gpt-4o-mini", "api_base": "", "api_key_env": ""}, "no API key"),
        # No key: where a key may go is the key policy's test (tests/common/test_llm_policy.py).
        (
            {"api_base": "http://no-such-host.invalid/v1", "api_key_env": ""},
            "not a URL the site can reach",
        ),
    ],
)
def test_configuration_errors_fail_at_once_with_the_reason(
    submission, rubrics, monkeypatch, fields, says
):
    from .factories import JudgeFactory

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    judge = JudgeFactory(**fields)
    judgment = Judgment.objects.create(
        submission=submission, judge=judge, rubric=rubrics["end2end"]
    )

    judgment = run(judgment)

    assert judgment.status == JudgmentStatus.FAILED
    assert says in judgment.error and "not retried" in judgment.error
    assert judgment.attempts == 1


def test_a_finished_judgment_makes_its_stage_stale_and_no_other(
    judgment, fake_llm, django_capture_on_commit_callbacks
):
    """The run writes with `update()` and `bulk_create()` (no model signal): its
    end is the service's event, for the judgment's stage and the agreement."""
    from tests.leaderboard.test_results_changed import generations, moved

    fake_llm.script(answer(review_answer("end2end", score=6, overall=7, confidence=4)))
    before = generations()
    with django_capture_on_commit_callbacks(execute=True):
        judgment = run(judgment)

    assert judgment.status == JudgmentStatus.DONE
    assert moved(before) == {"all", "end2end", "agreement"}
