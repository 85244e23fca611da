import pytest

from judging.services.rubrics import ensure_default_rubrics
from mlrbench_site.celery import app
from submissions.models import ArtifactKind, Stage
from tests.judging.factories import JudgeFactory
from tests.submissions.factories import SubmissionFactory, artifact_add

TEST_KEY = "sk-test-judge-key"


@pytest.fixture(autouse=True)
def _judging_settings(settings, tmp_path, monkeypatch):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    # Retries are real, only short: the tests wait milliseconds, not seconds.
    settings.LLM_RETRY_ATTEMPTS = 3
    settings.LLM_RETRY_BASE_SECONDS = 0.01
    settings.LLM_RETRY_MAX_SECONDS = 0.05
    settings.JUDGE_MAX_REASKS = 2
    # Most tests here are about scoring and script one answer per judge; those about
    # the hallucination pass turn it on (`hallucination_rubrics`).
    settings.JUDGE_HALLUCINATION_REVIEWS = False
    monkeypatch.setenv("TEST_JUDGE_KEY", TEST_KEY)


@pytest.fixture
def hallucination_rubrics(db, settings) -> dict:
    """The hallucination pass on, with the site's rubric of each stage that has one."""
    from judging.models import JudgmentKind, Rubric

    settings.JUDGE_HALLUCINATION_REVIEWS = True
    ensure_default_rubrics()
    Rubric.objects.filter(kind=JudgmentKind.HALLUCINATION).update(is_active=True)
    return {r.stage: r for r in Rubric.objects.filter(kind=JudgmentKind.HALLUCINATION, version=1)}


@pytest.fixture
def worker_env(settings) -> dict[str, str]:
    """What a judge worker process needs to see what the test sees."""
    return {
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "TEST_JUDGE_KEY": TEST_KEY,
        "LLM_RETRY_ATTEMPTS": str(settings.LLM_RETRY_ATTEMPTS),
        "LLM_RETRY_BASE_SECONDS": str(settings.LLM_RETRY_BASE_SECONDS),
        "LLM_RETRY_MAX_SECONDS": str(settings.LLM_RETRY_MAX_SECONDS),
        "SECRET_KEY": "test-only-secret-key",
        "DEBUG": "0",
        "JUDGE_HALLUCINATION_REVIEWS": str(settings.JUDGE_HALLUCINATION_REVIEWS),
    }


@pytest.fixture
def rubrics(db) -> dict:
    ensure_default_rubrics()
    from judging.models import Rubric

    return {rubric.stage: rubric for rubric in Rubric.objects.filter(version=1, kind="score")}


@pytest.fixture
def celery_eager():
    """Tasks run in-process when their message would be sent (no worker)."""
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield app
    app.conf.task_always_eager = previous


@pytest.fixture
def judge_for(fake_llm):
    def make(name: str = "judge-a", **kwargs):
        return JudgeFactory(name=name, api_base=fake_llm.url, **kwargs)

    return make


TASK_TEXT = "# Workshop on Bidirectional Human-AI Alignment\n\nStudy alignment both ways."


def end2end_submission(**kwargs):
    """An end-to-end run: a paper, its code, its execution log and a figure."""
    submission = SubmissionFactory(
        stage=Stage.END2END,
        task__slug=kwargs.pop("task_slug", "iclr2025_bi_align"),
        task__description=kwargs.pop("task_description", TASK_TEXT),
        **kwargs,
    )
    artifact_add(
        submission, "results/paper.md", ArtifactKind.PAPER, "# CEVA\n\nWe co-evolve values."
    )
    artifact_add(submission, "claude_code/run.py", ArtifactKind.CODE, "print('accuracy', 0.91)\n")
    artifact_add(submission, "results/log.txt", ArtifactKind.LOG, "epoch 1 accuracy 0.91\n")
    artifact_add(submission, "results/figure.png", ArtifactKind.FIGURE, b"\x89PNG\r\n\x1a\n\x00")
    return submission


@pytest.fixture
def submission(db):
    return end2end_submission()
