"""A judge run must work on SQLite too, the quick start's database, where judging
runs eagerly in the web process: the claim, the reproduction lookup (SQL of its
own), the scores and the derived judging state. The rest of the suite runs on
PostgreSQL."""

import json
import os
import subprocess
import sys

from tests.conftest import PROJECT_ROOT
from tests.support.fake_llm import answer

from .helpers import review_answer

REPRO_HEADING = "# The site's own re-run of the code (reproduction run)"


def test_two_judges_judge_a_submission_on_sqlite(tmp_path, fake_llm):
    fake_llm.default = answer(review_answer("end2end"))
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "DJANGO_SETTINGS_MODULE": "mlrbench_site.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'judging.sqlite3'}",
        "MEDIA_ROOT": str(tmp_path / "media"),
        "SECRET_KEY": "sqlite-test-only",
        "DEBUG": "0",
        "SQLITE_JUDGE_KEY": "sk-sqlite",
        # The key policy (common/llm_policy.py): it may go to the loopback model server.
        "LLM_KEY_ENV_ALLOW": "SQLITE_JUDGE_KEY",
        "LLM_KEY_HOSTS": "SQLITE_JUDGE_KEY=127.0.0.1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }

    def run(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, *args],
            cwd=PROJECT_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    run("manage.py", "migrate", "--verbosity", "0")
    outcome = json.loads(
        run("-m", "tests.judging.sqlite_judge_run", fake_llm.url).strip().splitlines()[-1]
    )

    assert outcome["submission"] == "judged"
    assert len(outcome["judgments"]) == 2
    for judgment in outcome["judgments"]:
        assert judgment["status"] == "done", judgment["error"]
        assert judgment["attempts"] == 1 and judgment["started"]
        assert judgment["strengths"], "the JSON field went through SQLite and back"
        assert judgment["cost_usd"] is None  # a model litellm has no price for
        assert set(judgment["scores"]) == {
            "Clarity",
            "Novelty",
            "Soundness",
            "Significance",
            "Overall",
        }
    # Both prompts carried the site's re-run, found by the SQL lookup on SQLite.
    prompts = [request.messages[-1]["content"] for request in fake_llm.requests]
    assert len(prompts) == 2
    assert all(REPRO_HEADING in prompt and "RERUN accuracy 0.91" in prompt for prompt in prompts)
