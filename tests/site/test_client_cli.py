"""The `mlrbench` client's own words, against the live server: what it prints
for an interval the board does not know, and for a file that is not there."""

import pytest

from tests.benchmark.factories import AgentFactory, TaskFactory
from tests.judging.factories import JudgeFactory
from tests.leaderboard.factories import judge_submission
from tests.submissions.factories import SubmissionFactory
from tests.support.client_cli import mlrbench_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_board_row_without_an_interval_shows_one_dash(live_server):
    # One task: too few for a bootstrap interval.
    submission = SubmissionFactory(agent=AgentFactory(name="solo"), task=TaskFactory())
    judge_submission(submission, JudgeFactory(name="judge-a"), {"Overall": 7, "Clarity": 6})

    board = mlrbench_run(live_server.url, "leaderboard", "--stage", "end2end")

    assert board.returncode == 0, board.stderr
    header, row = board.stdout.splitlines()[:2]
    cells = dict(zip(header.split("\t"), row.split("\t"), strict=True))
    assert cells["agent"] == "solo"
    assert cells["95% interval"] == "—"


def test_submitting_a_file_that_is_not_there_says_so(tmp_path):
    missing = tmp_path / "missing.zip"
    result = mlrbench_run(
        "http://127.0.0.1:9", "submit", str(missing), "--agent", "a", "--task", "t",
        "--stage", "paper",
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip() == f"mlrbench: {missing}: no such file or folder"
