"""One invalidation of the public results (`common.results.results_changed`):
each service event moves on the generations of the stage it changes (with the
answers that span stages, and the agreement when its inputs changed), no other
stage's, after its commit (a review round's assignments and close move every
stage: a task under open review is left out at every stage); a bulk write does
it once, at its end."""

from datetime import timedelta

import pytest
from django.utils import timezone

from common.bulk_writes import writes_deferred
from common.results import AGREEMENT_GENERATION, results_changed
from leaderboard.caching import DATA_GENERATION, stage_generation
from leaderboard.selectors.counting import LEADERBOARD_STAGES
from tests.benchmark.factories import UserFactory
from tests.reviews.scenario import review_data

from .factories import (
    STAGE_DIMENSIONS,
    AgentFactory,
    JudgeFactory,
    SubmissionFactory,
    judge_submission,
    rubric_for,
)

pytestmark = pytest.mark.django_db


def generations() -> dict[str, int]:
    return {
        "all": DATA_GENERATION.current(),
        "agreement": AGREEMENT_GENERATION.current(),
        **{stage: stage_generation(stage).current() for stage in LEADERBOARD_STAGES},
    }


def moved(before: dict[str, int]) -> set[str]:
    after = generations()
    return {name for name in after if after[name] != before[name]}


def test_the_named_stages_move_on_after_the_commit_and_no_other(
    django_capture_on_commit_callbacks,
):
    before = generations()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        results_changed(["idea", "paper"])
        assert moved(before) == set()  # not before the writes are visible
    assert len(callbacks) == 1
    assert moved(before) == {"all", "idea", "paper"}

    before = generations()
    with django_capture_on_commit_callbacks(execute=True):
        results_changed(["end2end"], agreement=True)
    assert moved(before) == {"all", "end2end", "agreement"}

    before = generations()
    with django_capture_on_commit_callbacks(execute=True):
        results_changed(None)
    assert moved(before) == {"all", *LEADERBOARD_STAGES}

    before = generations()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        results_changed([])  # no stage changed: nothing to do
    assert callbacks == [] and moved(before) == set()


def test_inside_a_bulk_write_every_stage_moves_once_at_its_end(
    django_capture_on_commit_callbacks,
):
    before = generations()
    with django_capture_on_commit_callbacks(execute=True) as callbacks, writes_deferred():
        results_changed(["idea"])
        results_changed(["paper"], agreement=True)
        assert moved(before) == set()
        assert callbacks == []
    # One callback: the boards' part, for every stage; the agreement's at once.
    assert len(callbacks) == 1
    assert moved(before) == {"all", "agreement", *LEADERBOARD_STAGES}


def test_a_failing_hook_costs_the_writer_nothing(settings, django_capture_on_commit_callbacks):
    settings.RESULTS_CHANGED_HOOKS = ["tests.leaderboard.test_results_changed.hook_that_fails"]
    before = generations()
    with django_capture_on_commit_callbacks(execute=True):
        results_changed(["idea"], agreement=True)
    assert moved(before) == {"agreement"}


def hook_that_fails(stages):
    raise ConnectionError("no cache")


# The services' events ---------------------------------------------------------------


def test_a_review_submitted_moves_its_stage_and_the_agreement_on(
    django_capture_on_commit_callbacks,
):
    from reviews.services import (
        assignment_add,
        review_round_create,
        review_submit,
        reviewer_register,
    )

    submission = SubmissionFactory(agent=AgentFactory(name="alpha"), stage="idea")
    judge_submission(submission, JudgeFactory(name="claude-judge"), {"Overall": 6})
    reviewer = UserFactory(username="rev")
    reviewer_register(user=reviewer)
    review_round = review_round_create(
        name="r", stage="idea", due_at=timezone.now() + timedelta(days=3),
        submissions=[submission],
    )  # fmt: skip

    # An assignment puts the paper's task under open review: every run of it, at
    # every stage, off the public answers (issue 40).
    before = generations()
    with django_capture_on_commit_callbacks(execute=True):
        assignment = assignment_add(
            review_round=review_round, reviewer=reviewer, submission=submission
        )
    assert moved(before) == {"all", *LEADERBOARD_STAGES}

    before = generations()
    scores = dict.fromkeys(STAGE_DIMENSIONS["idea"], 5)
    with django_capture_on_commit_callbacks(execute=True):
        review_submit(assignment=assignment, data=review_data(scores))
    assert moved(before) == {"all", "idea", "agreement"}


def test_a_round_closed_and_released_moves_its_stage_on(django_capture_on_commit_callbacks):
    from reviews.services import review_round_close, review_round_create, review_round_release

    submission = SubmissionFactory(agent=AgentFactory(name="alpha"), stage="paper")
    review_round = review_round_create(
        name="r", stage="paper", due_at=timezone.now() + timedelta(days=3),
        submissions=[submission],
    )  # fmt: skip
    before = generations()
    with django_capture_on_commit_callbacks(execute=True):
        review_round_close(review_round=review_round)
    # Every run of its tasks, at every stage, comes back (issue 40); the round's
    # state is an agreement input.
    assert moved(before) == {"all", *LEADERBOARD_STAGES, "agreement"}

    before = generations()
    with django_capture_on_commit_callbacks(execute=True):
        review_round_release(review_round=review_round)
    # Closed already: only the released reviews' stage (and the agreement) moves.
    assert moved(before) == {"all", "paper", "agreement"}


def test_a_failed_judgment_re_run_moves_its_stage_on(django_capture_on_commit_callbacks):
    from judging.models import JudgmentStatus
    from judging.services.queue import judgment_rerun

    submission = SubmissionFactory(agent=AgentFactory(name="alpha"), stage="proposal")
    judgment = judge_submission(
        submission, JudgeFactory(name="claude-judge"), {}, status=JudgmentStatus.FAILED
    )
    before = generations()
    with django_capture_on_commit_callbacks(execute=True):
        judgment_rerun(judgment_id=judgment.pk)
    assert moved(before) == {"all", "proposal", "agreement"}


def test_a_judge_activated_moves_every_stage_on(django_capture_on_commit_callbacks):
    from judging.services.judges import judge_set_active

    JudgeFactory(name="claude-judge")
    before = generations()
    with django_capture_on_commit_callbacks(execute=True):
        judge_set_active(name="claude-judge", active=False)
    assert moved(before) == {"all", *LEADERBOARD_STAGES}


def test_an_experiment_run_cancelled_moves_its_stage_on(django_capture_on_commit_callbacks):
    from experiments.models import ExperimentPhase, ExperimentRun
    from experiments.queue import experiment_cancel

    submission = SubmissionFactory(agent=AgentFactory(name="alpha"), stage="experiment")
    run = ExperimentRun.objects.create(
        submission=submission,
        phase=ExperimentPhase.REPRO,
        command="python main.py",
        time_limit_seconds=60,
    )
    before = generations()
    with django_capture_on_commit_callbacks(execute=True):
        experiment_cancel(run=run)
    assert moved(before) == {"all", "experiment"}


def test_an_admin_edit_moves_its_stage_on(admin_client, django_capture_on_commit_callbacks):
    """The admin says what it changed (`common.results_admin.ResultsAdminMixin`):
    a rubric saved, its stage; a judgment deleted, its stage and the agreement."""
    rubric = rubric_for("idea")
    before = generations()
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            f"/admin/judging/rubric/{rubric.pk}/change/",
            {"kind": "score", "is_active": "on", "source": "x"},
        )
    assert response.status_code == 302
    assert moved(before) == {"all", "idea"}

    submission = SubmissionFactory(agent=AgentFactory(name="alpha"), stage="paper")
    judgment = judge_submission(submission, JudgeFactory(name="claude-judge"), {"Overall": 6})
    before = generations()
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            f"/admin/judging/judgment/{judgment.pk}/delete/", {"post": "yes"}
        )
    assert response.status_code == 302
    assert moved(before) == {"all", "paper", "agreement"}


def test_an_admin_bulk_delete_moves_every_stage_on(
    admin_client, django_capture_on_commit_callbacks
):
    """Agents deleted from the list at once: every stage (an agent names none)."""
    agents = [AgentFactory(name="alpha"), AgentFactory(name="beta")]
    before = generations()
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/admin/benchmark/agent/",
            {
                "action": "delete_selected",
                "_selected_action": [agent.pk for agent in agents],
                "post": "yes",
            },
        )
    assert response.status_code == 302
    assert moved(before) == {"all", *LEADERBOARD_STAGES}


def test_a_model_write_outside_services_and_the_admin_moves_nothing(
    django_capture_on_commit_callbacks,
):
    """No model signal: a shell's write says what it changed itself, and deletes
    stay fast (see tests/judging/test_fast_deletes.py)."""
    from judging.models import DimensionScore

    submission = SubmissionFactory(agent=AgentFactory(name="alpha"), stage="paper")
    judgment = judge_submission(submission, JudgeFactory(name="claude-judge"), {"Overall": 6})
    before = generations()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        score = DimensionScore.objects.get(judgment=judgment, dimension="Overall")
        score.score = 2
        score.save()
        AgentFactory(name="beta")
    assert callbacks == [] and moved(before) == set()
