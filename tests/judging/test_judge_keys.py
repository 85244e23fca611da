"""Issue 40, "provider keys leave" and "SSRF", for judges: a judge added through the
admin with `api_key_env=SECRET_KEY` and an `api_base` of its own sent
`Bearer <SECRET_KEY>` there. The key and address policy (common/llm_policy.py)
refuses it in the admin, in `judges add` and in `judge_create`, and a judge row
written before the policy fails its judgment without calling its server."""

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from judging.models import Judge, Judgment, JudgmentStatus
from judging.services.run import judgment_run

from .helpers import review_answer

pytestmark = pytest.mark.django_db


def _admin_add(admin_client, **fields):
    data = {
        "name": "sneaky",
        "model": "openai/gpt-4o-mini",
        "model_family": "openai",
        "is_active": "on",
        "api_base": "",
        "api_key_env": "",
        "timeout_seconds": "60",
        "requests_per_minute": "60",
        "temperature": "0",
        "max_tokens": "1000",
        **fields,
    }
    return admin_client.post(reverse("admin:judging_judge_add"), data)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"api_key_env": "SECRET_KEY"}, "SECRET_KEY is one of the site&#x27;s own settings"),
        ({"api_key_env": "ANTHROPIC_API_KEY"}, "may be sent only to api.anthropic.com"),
        ({"api_base": "http://169.254.169.254/latest/v1"}, "cloud metadata"),
    ],
)
def test_the_admin_refuses_a_judge_whose_key_or_server_the_policy_refuses(
    admin_client, production_policy, fake_llm, fields, says
):
    response = _admin_add(admin_client, **{"api_base": fake_llm.url, **fields})

    assert response.status_code == 200  # the form again, with the error
    assert says in response.content.decode()
    assert not Judge.objects.filter(name="sneaky").exists()
    assert fake_llm.requests == []


def test_the_admin_still_adds_a_judge_the_policy_allows(admin_client, production_policy):
    response = _admin_add(
        admin_client, model="anthropic/claude-3-7-sonnet-20250219", api_key_env="ANTHROPIC_API_KEY"
    )
    assert response.status_code == 302
    assert Judge.objects.get(name="sneaky").api_key_env == "ANTHROPIC_API_KEY"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--api-key-env", "SECRET_KEY"], "api_key_env: SECRET_KEY is one of the site's own"),
        (["--api-key-env", "DATABASE_URL"], "api_key_env: DATABASE_URL"),
        (["--api-key-env", "GEMINI_API_KEY"], "api_key_env: GEMINI_API_KEY may be sent only"),
        (["--api-base", "http://metadata.google.internal/v1"], "api_base: the api_base host"),
    ],
)
def test_judges_add_refuses_what_the_policy_refuses(production_policy, args, message):
    with pytest.raises(CommandError, match=message):
        call_command(
            "judges",
            "add",
            "--name",
            "sneaky",
            "--model",
            "openai/x",
            "--api-base",
            "http://127.0.0.1:8081/v1",
            *args,
            "--no-check",
        )
    assert not Judge.objects.exists()


def test_a_judge_saved_before_the_policy_fails_without_calling_its_server(
    production_policy, submission, rubrics, fake_llm, monkeypatch
):
    monkeypatch.setenv("SECRET_KEY", production_policy.SECRET_KEY)
    # As a row written before the policy: no validation on the way in.
    judge = Judge.objects.create(
        name="old-row", model="openai/x", api_base=fake_llm.url, api_key_env="SECRET_KEY"
    )
    judgment = Judgment.objects.create(
        submission=submission, judge=judge, rubric=rubrics["end2end"]
    )
    fake_llm.script(answer_of_end2end())

    judgment_run(judgment_id=judgment.pk)

    judgment.refresh_from_db()
    assert judgment.status == JudgmentStatus.FAILED
    assert "SECRET_KEY is one of the site's own settings" in judgment.error
    assert production_policy.SECRET_KEY not in judgment.error
    assert fake_llm.requests == []


def answer_of_end2end():
    from tests.support.fake_llm import answer

    return answer(review_answer("end2end", overall=7))
