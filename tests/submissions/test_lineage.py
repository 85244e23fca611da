"""Lineage: a submission names the earlier-stage submissions it was built on
(API field, browser form, `based_on.json`), and a stepwise agent samples them."""

import json
from pathlib import Path

import pytest

from submissions.intake import submission_intake
from submissions.lineage import LineageRefused, stage_inputs_resolve, stage_inputs_sample
from submissions.models import Submission, SubmissionInput
from tests.benchmark.factories import AgentFactory
from tests.benchmark.runs import PAPER, SAMPLE_TASK, zip_entries
from tests.errors import error_items, error_messages
from tests.reviews.factories import AssignmentFactory
from tests.submissions.factories import SubmissionFactory
from tests.support.uploads import upload

pytestmark = pytest.mark.django_db

PROPOSAL = b"# A proposal\n\nBuilt on an idea.\n"
CODE = b"print('accuracy 0.91')\n"
LOG = b"accuracy 0.91\n"


def proposal_file(tmp_path: Path) -> Path:
    path = tmp_path / "proposal.md"
    path.write_bytes(PROPOSAL)
    return path


def experiment_archive(tmp_path: Path, **extra: bytes) -> Path:
    entries = {"code/run.py": CODE, "results/log.txt": LOG, "results.md": b"acc 0.9\n", **extra}
    return zip_entries(tmp_path / "run.zip", entries)


def test_an_upload_names_its_inputs_and_both_pages_and_the_api_show_the_lineage(
    client, agent, task, token, tmp_path
):
    idea = SubmissionFactory(task=task, stage="idea")
    other_idea = SubmissionFactory(task=task, stage="idea")

    response = upload(
        client,
        proposal_file(tmp_path),
        token=token,
        stage="proposal",
        based_on=[other_idea.pk, idea.pk],
    )

    assert response.status_code == 201, response.content
    proposal = Submission.objects.get(pk=response.json()["id"])
    # In the order given.
    assert list(proposal.based_on.order_by("outputs__position")) == [other_idea, idea]
    detail = client.get(f"/api/submissions/{proposal.pk}/").json()
    assert detail["based_on"] == [other_idea.pk, idea.pk]
    assert client.get(f"/api/submissions/{idea.pk}/").json()["used_by"] == [proposal.pk]

    page = client.get(proposal.get_absolute_url()).content.decode()
    assert f'href="{other_idea.get_absolute_url()}"' in page
    assert f'href="{idea.get_absolute_url()}"' in page
    assert "Based on" in page
    input_page = client.get(idea.get_absolute_url()).content.decode()
    assert "Used by" in input_page and f'href="{proposal.get_absolute_url()}"' in input_page


def test_an_archive_names_its_inputs_in_based_on_json(client, agent, task, token, tmp_path):
    proposal = SubmissionFactory(task=task, stage="proposal")
    archive = experiment_archive(tmp_path, **{"based_on.json": json.dumps([proposal.pk]).encode()})

    response = upload(client, archive, token=token, stage="experiment")

    assert response.status_code == 201, response.content
    assert client.get(f"/api/submissions/{response.json()['id']}/").json()["based_on"] == [
        proposal.pk
    ]


def test_based_on_json_of_another_form_is_refused_with_the_form_it_must_have(
    client, agent, task, token, tmp_path
):
    proposal = SubmissionFactory(task=task, stage="proposal")
    content = json.dumps({"based_on": [proposal.pk]}).encode()
    archive = experiment_archive(tmp_path, **{"based_on.json": content})

    response = upload(client, archive, token=token, stage="experiment")

    assert response.status_code == 400
    assert "must be a JSON list of submission ids" in error_messages(response)["archive"][0]
    assert Submission.objects.count() == 1


def test_the_field_and_the_file_must_agree(client, agent, task, token, tmp_path):
    first, second = SubmissionFactory.create_batch(2, task=task, stage="proposal")
    archive = experiment_archive(tmp_path, **{"based_on.json": json.dumps([first.pk]).encode()})

    response = upload(client, archive, token=token, stage="experiment", based_on=[second.pk])

    assert response.status_code == 400
    assert "differ" in error_messages(response)["based_on"][0]
    assert Submission.objects.count() == 2


@pytest.mark.parametrize(
    ("make_input", "stage", "code", "words"),
    [
        (lambda task: SubmissionFactory(stage="idea"), "proposal", "wrong_task", "another task"),
        (
            lambda task: SubmissionFactory(task=task, stage="paper"),
            "proposal",
            "wrong_stage",
            "idea",
        ),
        (
            lambda task: SubmissionFactory(task=task, stage="proposal"),
            "proposal",
            "wrong_stage",
            "a proposal submission",
        ),
        (
            lambda task: SubmissionFactory(task=task, stage="idea", status="failed"),
            "proposal",
            "not_ready",
            "not ready",
        ),
        (
            lambda task: SubmissionFactory(task=task, stage="idea"),
            "end2end",
            "no_inputs_allowed",
            "starts from the task",
        ),
    ],
)
def test_an_input_that_cannot_be_one_is_refused_and_nothing_is_stored(
    client, media_root, agent, task, token, tmp_path, make_input, stage, code, words
):
    candidate = make_input(task)
    path = proposal_file(tmp_path)
    if stage == "end2end":
        path = zip_entries(tmp_path / "run.zip", {"results/paper.md": PAPER})
    before = Submission.objects.count()

    response = upload(client, path, token=token, stage=stage, based_on=[candidate.pk])

    assert response.status_code == 400, response.content
    (item,) = error_items(response)
    assert (item["field"], item["code"]) == ("based_on", code)
    assert words in item["message"]
    assert Submission.objects.count() == before
    assert not SubmissionInput.objects.exists()
    assert not (media_root / "submissions" / str(before + 1)).exists()


def test_an_unknown_id_and_one_the_uploader_may_not_see_read_alike(
    client, owner, agent, task, token, tmp_path
):
    blind = SubmissionFactory(task=task, stage="idea")
    # The uploader reviews a paper of this task blind: its submissions are hidden from them.
    AssignmentFactory(reviewer=owner, submission=SubmissionFactory(task=task, stage="end2end"))

    hidden = upload(
        client, proposal_file(tmp_path), token=token, stage="proposal", based_on=[blind.pk]
    )
    unknown = upload(
        client, proposal_file(tmp_path), token=token, stage="proposal", based_on=[999999]
    )

    for response, pk in ((hidden, blind.pk), (unknown, 999999)):
        assert response.status_code == 400
        (item,) = error_items(response)
        assert (item["code"], item["message"]) == ("does_not_exist", f"no submission {pk}")
    assert not Submission.objects.filter(stage="proposal").exists()


def test_the_browser_form_takes_comma_separated_ids(client, owner, agent, task, tmp_path):
    idea = SubmissionFactory(task=task, stage="idea")
    client.force_login(owner)
    with proposal_file(tmp_path).open("rb") as handle:
        response = client.post(
            "/submissions/new/",
            {
                "agent": agent.pk,
                "task": SAMPLE_TASK,
                "stage": "proposal",
                "archive": handle,
                "based_on": f" {idea.pk} ,",
            },
        )
    assert response.status_code == 302, response.content
    assert list(Submission.objects.get(stage="proposal").based_on.all()) == [idea]

    with proposal_file(tmp_path).open("rb") as handle:
        response = client.post(
            "/submissions/new/",
            {
                "agent": agent.pk,
                "task": SAMPLE_TASK,
                "stage": "proposal",
                "archive": handle,
                "based_on": "12; x",
            },
        )
    assert response.status_code == 400
    assert "comma separated" in response.content.decode()


def test_the_intake_takes_inputs_as_a_keyword(agent, task, tmp_path):
    idea = SubmissionFactory(task=task, stage="idea")
    proposal = submission_intake(
        agent=agent,
        task=task,
        stage="proposal",
        archive=proposal_file(tmp_path),
        archive_name="proposal.md",
        uploader=None,
        source="api",
        based_on=[idea.pk],
    )
    assert list(proposal.based_on.all()) == [idea]


def test_a_submission_is_not_based_on_itself_by_the_database():
    from django.db import IntegrityError, transaction

    submission = SubmissionFactory(stage="paper")
    with pytest.raises(IntegrityError), transaction.atomic():
        SubmissionInput.objects.create(submission=submission, based_on=submission, position=0)


def test_inputs_by_id_are_checked_like_an_upload(task):
    proposal = SubmissionFactory(task=task, stage="proposal")
    idea = SubmissionFactory(task=task, stage="idea")
    assert stage_inputs_resolve(task=task, stage="experiment", ids=[proposal.pk, idea.pk]) == [
        proposal,
        idea,
    ]
    with pytest.raises(LineageRefused, match="twice"):
        stage_inputs_resolve(task=task, stage="experiment", ids=[idea.pk, idea.pk])


# The stepwise sampler.


def test_the_same_seed_picks_the_same_inputs_whatever_the_rows_order(task):
    proposals = [SubmissionFactory(task=task, stage="proposal") for _ in range(8)]
    picks = {
        seed: stage_inputs_sample(task=task, stage="experiment", seed=seed, count=3)
        for seed in range(6)
    }

    # Rewriting rows moves them in PostgreSQL's heap, so a scan returns them in another order.
    for submission in reversed(proposals[:5]):
        Submission.objects.filter(pk=submission.pk).update(error="touched")

    again = {
        seed: stage_inputs_sample(task=task, stage="experiment", seed=seed, count=3)
        for seed in range(6)
    }
    assert again == picks
    assert all(len(set(p)) == 3 and {s.stage for s in p} == {"proposal"} for p in picks.values())
    # The seed matters: not every seed draws the same inputs.
    assert len({tuple(s.pk for s in p) for p in picks.values()}) > 1


def test_the_sampler_leaves_out_the_agent_itself_older_versions_and_failed_runs(task):
    me = AgentFactory()
    other = AgentFactory()
    SubmissionFactory(task=task, stage="idea", agent=me)
    SubmissionFactory(task=task, stage="idea", agent=other, version=1)
    newest = SubmissionFactory(task=task, stage="idea", agent=other, version=2)
    SubmissionFactory(task=task, stage="idea", status="failed")
    SubmissionFactory(stage="idea")  # another task

    for seed in range(10):
        assert stage_inputs_sample(task=task, stage="proposal", seed=seed, exclude_agent=me) == [
            newest
        ]


def test_no_input_to_sample_is_a_clear_error(task):
    me = AgentFactory(name="stepper")
    SubmissionFactory(task=task, stage="experiment", agent=me)

    with pytest.raises(LineageRefused) as refused:
        stage_inputs_sample(task=task, stage="paper", seed=1, exclude_agent=me)
    assert refused.value.code == "no_inputs"
    assert refused.value.message == (
        f"task {task.slug} has no ready experiment submissions by agents other than stepper "
        "to base a paper on; 1 needed"
    )
    with pytest.raises(LineageRefused, match="idea stage takes no inputs"):
        stage_inputs_sample(task=task, stage="idea", seed=1)


def test_based_on_json_nested_too_deeply_is_refused_not_a_crash(
    client, agent, task, token, tmp_path
):
    archive = experiment_archive(tmp_path, **{"based_on.json": b"[" * 5_000 + b"]" * 5_000})

    response = upload(client, archive, token=token, stage="experiment")

    assert response.status_code == 400
    assert "based_on.json is not JSON" in error_messages(response)["archive"][0]
