"""Issue 17, server side: the upload that is never judged says why, topics for
every task, task titles, the review rounds' guards, the organisers' commands."""

import csv
import io
import re
from datetime import timedelta

import pytest
from django.contrib.admin.sites import site as admin_site
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from benchmark.accounts import api_token_authenticate, api_token_create
from benchmark.forms import AgentForm, ApiTokenForm, model_family_guess
from benchmark.mlrbench_import import ImportOptions, tasks_part
from benchmark.models import Agent, ModelFamily, Task, Team, Topic
from benchmark.roles import organiser_grant
from benchmark.services import SHIPPED_TOPICS_CSV, task_topics_default_apply
from benchmark.task_files import GENERIC_HEADINGS, task_file_parse, topics_csv_parse
from judging.models import Judgment
from reviews.admin import ReviewerProfileForm
from reviews.forms import ReviewRoundForm
from reviews.services import ReviewInvalid, review_round_create
from submissions.forms import SubmissionUploadForm
from tests.benchmark.factories import (
    AgentFactory,
    SubmissionFactory,
    TaskFactory,
    TeamFactory,
    UserFactory,
)
from tests.benchmark.runs import SAMPLE_TASK, sample_run, zip_folder
from tests.judging.factories import JudgeFactory
from tests.support.docs import section, user_docs_text

pytestmark = pytest.mark.django_db


# --- the upload that is never judged -------------------------------------------------


def test_healthz_reports_the_number_of_active_judges(client):
    assert client.get("/healthz").json()["active_judges"] == 0
    JudgeFactory(is_active=True)
    JudgeFactory(is_active=False)
    assert client.get("/healthz").json()["active_judges"] == 1


def test_without_an_active_judge_the_submission_page_tells_staff_how_to_add_one(client):
    JudgeFactory(name="claude-3-7-sonnet-20250219", is_active=False)
    submission = SubmissionFactory(stage="end2end")
    # A visitor reads that it is not judged yet, and no organiser's instructions.
    html = client.get(submission.get_absolute_url()).content.decode()
    assert 'data-testid="not-judged-yet"' in html and "No judge is active" not in html
    assert "not judged yet" in html
    organiser = UserFactory()
    organiser_grant(user=organiser)
    client.force_login(organiser)
    html = client.get(submission.get_absolute_url()).content.decode()
    hint = html[html.index('data-testid="no-active-judge"') :][:3000]
    assert "No judge is active" in hint
    assert "--api-key-env ANTHROPIC_API_KEY" in hint  # a hosted model
    assert "--api-base http://127.0.0.1:8081/v1" in hint  # llama.cpp, Ollama or vLLM
    assert "judges enable NAME" in hint
    assert 'data-testid="summary-stage-score"' in html


def test_staff_get_judge_now_once_a_judge_is_active_and_it_queues_the_judges(client):
    staff = UserFactory()
    organiser_grant(user=staff)
    submission = SubmissionFactory(stage="end2end")
    client.force_login(staff)
    assert (
        'data-testid="judge-now"' not in client.get(submission.get_absolute_url()).content.decode()
    )

    judge = JudgeFactory(is_active=True)
    html = client.get(submission.get_absolute_url()).content.decode()
    assert 'data-testid="no-active-judge"' not in html
    assert 'data-testid="judge-now"' in html
    response = client.post(
        reverse("judging:submission-judge-now", args=[submission.pk]),
        {"next": submission.get_absolute_url()},
        follow=True,
    )
    # The judge scores the paper and also reviews it for hallucinations.
    assert "2 judgments queued." in response.content.decode()
    assert sorted(
        Judgment.objects.filter(submission=submission, judge=judge).values_list("kind", flat=True)
    ) == ["hallucination", "score"]
    # Asked once: no button any more.
    assert (
        'data-testid="judge-now"' not in client.get(submission.get_absolute_url()).content.decode()
    )


def test_judge_now_is_for_organisers_only(client):
    JudgeFactory(is_active=True)
    submission = SubmissionFactory(stage="end2end")
    url = reverse("judging:submission-judge-now", args=[submission.pk])
    response = client.post(url)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    client.force_login(UserFactory())  # signed in, not an organiser: refused
    assert client.post(url).status_code == 403
    assert not Judgment.objects.exists()


def test_the_upload_answer_carries_the_no_judge_notice(client, media_root, mlrbench_data, tmp_path):
    owner = UserFactory()
    AgentFactory(name="my-agent", team=TeamFactory(members=[owner]))
    TaskFactory(slug=SAMPLE_TASK)
    key = api_token_create(user=owner, name="laptop").key
    archive = zip_folder(sample_run(mlrbench_data), tmp_path / "run.zip")
    with archive.open("rb") as handle:
        body = client.post(
            "/api/submissions/",
            {"agent": "my-agent", "task": SAMPLE_TASK, "stage": "end2end", "archive": handle},
            HTTP_AUTHORIZATION=f"Token {key}",
        ).json()
    (notice,) = body["notices"]
    assert "No judge is active" in notice and "judges add" in notice


# --- topics and titles ----------------------------------------------------------------


def test_the_shipped_classification_covers_every_task_with_one_of_the_nine_topics(mlrbench_data):
    topics, errors = topics_csv_parse(SHIPPED_TOPICS_CSV)
    assert errors == []
    slugs = {path.stem for path in (mlrbench_data / "tasks").glob("*.md")}
    assert len(slugs) == 201 and set(topics) == slugs
    assert set(topics.values()) <= set(Topic.values) and "" not in topics.values()
    # Every topic is used; the paper's largest three are among the largest here.
    counts = {topic: list(topics.values()).count(topic) for topic in Topic.values}
    assert all(counts.values())
    largest = sorted(counts, key=counts.get, reverse=True)[:4]
    assert {Topic.TRUSTWORTHY_AI, Topic.AI_FOR_SCIENCE, Topic.LLM_VLM} <= set(largest)


def test_import_gives_every_task_its_topic_and_keeps_one_set_in_the_admin(mlrbench_data):
    report = tasks_part(mlrbench_data, ImportOptions())
    assert report.counts["topics set"] == 201
    assert not Task.objects.filter(topic="").exists()
    task = Task.objects.get(slug="iclr2025_bi_align")
    assert task.topic == Topic.TRUSTWORTHY_AI
    Task.objects.filter(pk=task.pk).update(topic=Topic.OTHER)  # an organiser's edit
    again = tasks_part(mlrbench_data, ImportOptions())
    assert "topics set" not in again.counts and again.changed == 0
    assert Task.objects.get(pk=task.pk).topic == Topic.OTHER
    assert task_topics_default_apply() == 0


def test_the_topic_is_editable_in_the_admins_task_list():
    assert "topic" in admin_site._registry[Task].list_editable


def test_no_task_is_titled_by_a_section_heading(mlrbench_data):
    titles = {
        path.stem: task_file_parse(path).title
        for path in sorted((mlrbench_data / "tasks").glob("*.md"))
    }
    generic = {slug: t for slug, t in titles.items() if t.strip(":").casefold() in GENERIC_HEADINGS}
    assert generic == {}
    assert titles["iclr2025_ai4mat"] == "AI for Accelerated Materials Discovery (AI4Mat) Workshop"
    assert titles["neurips2024_fitml"].startswith("Workshop on Fine-Tuning in Modern Machine")
    assert titles["neurips2023_mp2"] == "MP2 (NeurIPS 2023)"  # the humanised slug


def test_a_task_page_has_one_h1(client, mlrbench_data):
    path = mlrbench_data / "tasks" / "iclr2025_bi_align.md"
    parsed = task_file_parse(path)
    TaskFactory(slug=parsed.slug, title=parsed.title, description=parsed.description)
    html = client.get(f"/tasks/{parsed.slug}/").content.decode()
    assert len(re.findall(r"<h1[ >]", html)) == 1


# --- reviewer rounds ------------------------------------------------------------------


def test_reviewers_sign_in_to_their_queue(client):
    from reviews.services import reviewer_register

    user = UserFactory(username="rita")
    reviewer_register(user=user)
    response = client.post(
        reverse("login"), {"username": "rita", "password": "a-long-test-password"}
    )
    assert response.status_code == 302 and response["Location"] == reverse("reviews:queue")


def test_expertise_is_a_validated_choice_of_the_nine_topics():
    user = UserFactory()
    base = {"user": user.pk, "affiliation": "", "max_load": 5}
    form = ReviewerProfileForm(data={**base, "expertise": ["ML Theory"]})
    assert not form.is_valid() and "expertise" in form.errors  # a label is not a key
    form = ReviewerProfileForm(data={**base, "expertise": ["ml_theory", "trustworthy_ai"]})
    assert form.is_valid(), form.errors
    assert form.save().expertise == ["ml_theory", "trustworthy_ai"]


def test_a_round_takes_only_the_newest_version_of_each_run():
    agent, task = AgentFactory(), TaskFactory()
    old = SubmissionFactory(agent=agent, task=task, version=1)
    new = SubmissionFactory(agent=agent, task=task, version=2)
    other = SubmissionFactory()
    due = timezone.now() + timedelta(days=7)
    review_round = review_round_create(name="r", stage="end2end", due_at=due)
    assert set(review_round.submissions.all()) == {new, other}
    with pytest.raises(ReviewInvalid, match="only the newest version"):
        review_round_create(name="r2", stage="end2end", due_at=due, submissions=[old, new])

    html = ReviewRoundForm().as_p()
    assert f"{agent.name} / {task.slug} · v2" in html and "· v1" not in html.replace("· v1</", "")
    assert 'data-stage="end2end"' in html


# --- organisers' commands and the forms -----------------------------------------------


def test_a_site_is_set_up_by_a_script(capsys):
    UserFactory(username="alice")
    call_command("accounts", "team-create", "Alice's lab", "--user", "alice")
    call_command(
        "accounts",
        "agent-register",
        "alice-agent",
        "--user",
        "alice",
        "--base-model",
        "anthropic/claude-3-7-sonnet-20250219",
    )
    agent = Agent.objects.get(name="alice-agent")
    assert agent.team == Team.objects.get(slug="alices-lab")
    assert agent.model_family == ModelFamily.ANTHROPIC
    capsys.readouterr()
    call_command("accounts", "token-create", "--user", "alice", "--name", "ci")
    out, err = capsys.readouterr()
    key = out.strip()
    assert "shown only now" in err
    token = api_token_authenticate(key=key)
    assert token is not None and token.user.username == "alice"


def test_accounts_user_create_makes_a_user_who_can_sign_in_with_roles(client, monkeypatch):
    from django.contrib.auth.models import User
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="accounts user-create alice"):
        call_command("accounts", "team-create", "My lab", "--user", "alice")
    monkeypatch.setenv("ALICE_PW", "a-long-test-password")

    call_command(
        "accounts",
        "user-create",
        "alice",
        "--email",
        "alice@example.org",
        "--password-env",
        "ALICE_PW",
        "--staff",
        "--reviewer",
    )

    alice = User.objects.get(username="alice")
    assert alice.is_staff and alice.email == "alice@example.org"
    assert alice.groups.filter(name="reviewers").exists() and alice.reviewer_profile
    signed_in = client.post(
        "/accounts/login/", {"username": "alice", "password": "a-long-test-password"}
    )
    assert signed_in.status_code == 302 and "_auth_user_id" in client.session
    call_command("accounts", "team-create", "My lab", "--user", "alice")
    assert Team.objects.filter(members=alice).exists()
    # Nothing written for a bad input; no terminal to ask a password on.
    monkeypatch.setenv("SHORT_PW", "abc")
    for args, says in (
        (["alice", "--password-env", "ALICE_PW"], "exists already"),
        (["bob", "--password-env", "SHORT_PW"], "too short"),
        (["bob", "--password-env", "NO_SUCH_VAR"], "NO_SUCH_VAR is not set"),
        (["bob"], "no terminal"),
    ):
        with pytest.raises(CommandError, match=says):
            call_command("accounts", "user-create", *args)
    assert not User.objects.filter(username="bob").exists()


def test_the_model_family_is_guessed_from_the_base_model():
    assert model_family_guess("o4-mini") == ModelFamily.OPENAI
    assert model_family_guess("openai/Qwen3-32B") == ModelFamily.QWEN
    assert model_family_guess("gemini/gemini-2.5-pro") == ModelFamily.GOOGLE
    assert model_family_guess("deepseek/deepseek-chat") == ModelFamily.DEEPSEEK
    assert model_family_guess("some-local-model") == ModelFamily.OTHER
    user = UserFactory()
    TeamFactory(members=[user])
    assert AgentForm(user=user).initial["team"] == user.teams.get().pk  # the only team
    form = AgentForm(
        data={
            "team": user.teams.get().pk,
            "name": "a-1",
            "display_name": "A",
            "base_model": "claude-3-5-haiku",
        },
        user=user,
    )
    assert form.is_valid(), form.errors
    assert form.cleaned_data["model_family"] == ModelFamily.ANTHROPIC


def test_the_upload_form_preselects_the_only_agent_and_remembers_the_last_stage(client):
    user = UserFactory()
    agent = AgentFactory(team=TeamFactory(members=[user]))
    assert SubmissionUploadForm(user=user).initial["agent"] == agent.pk
    client.force_login(user)
    session = client.session
    session["upload_last_stage"] = "paper"
    session.save()
    html = client.get(reverse("submissions:submission-upload")).content.decode()
    assert re.search(r'<option value="paper" selected>', html)
    assert ApiTokenForm().fields["name"].label == "Token name"


# --- small data said plainly ----------------------------------------------------------


def test_agent_pages_say_no_submissions_for_stages_without_any(client):
    agent = AgentFactory()
    SubmissionFactory(agent=agent, stage="paper")
    html = client.get(reverse("leaderboard:agent-detail", args=[agent.name])).content.decode()
    assert re.search(r'data-testid="stage-empty-idea">no submissions<', html)
    assert re.search(r'data-testid="stage-empty-paper">not judged yet<', html)


def test_the_csv_is_documented_against_the_papers_distribution():
    table = section("## Topics")
    rows = list(csv.reader(io.StringIO(SHIPPED_TOPICS_CSV.read_text(encoding="utf-8"))))[1:]
    for label in dict(Topic.choices).values():
        n = sum(1 for _slug, topic in rows if topic == label)
        assert f"| {label} | {n} |" in table


def test_the_docs_run_manage_py_with_the_virtual_environments_python():
    """A fresh shell has no activated environment: `python` is not the project's
    (or not there at all); the commands in the README and docs/ say
    `.venv/bin/python manage.py`."""
    text = user_docs_text()
    assert text.count(".venv/bin/python manage.py") > 40
    bare = [
        line.strip()
        for line in text.splitlines()
        if re.search(r"(?<![\w/.-])python manage\.py", line) and "docker compose" not in line
    ]
    assert bare == []
