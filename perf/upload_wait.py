"""An upload's answer time against the judge model's latency, without a broker.

On the embedded defaults (no broker: Celery runs tasks in the site's process)
an upload once waited for its judges: 10.3 s with a model that takes 5 s a
call. Now judging runs in the site's background threads after the answer
(BACKGROUND_THREADS, common.tasks.run_soon). This script serves a judge from
the loopback OpenAI-compatible server of the tests (tests/support/fake_llm.py)
at two latencies, uploads a proposal through `POST /api/submissions/` at each
(an empty SQLite database, one active judge, no broker), and prints each
upload's answer time as a ratio to `GET /healthz` measured in the same run,
and the ratio of the slow model's upload to the fast one's (about 1: the
answer does not wait for the model). It then waits for the background work
and checks that every upload was judged.

Goal (issue 39): the upload's answer time independent of the model's latency
(slow/fast ratio under 1.5 with a model 10x slower).

    .venv/bin/python perf/upload_wait.py [--fast 0.5 --slow 5]
    .venv/bin/python perf/upload_wait.py --smoke   # 0.2 s and 2 s, one upload each
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def environment(work: Path) -> None:
    """The embedded defaults in a scratch folder: SQLite, no broker, no Redis."""
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "mlrbench_site.settings",
            "DATABASE_URL": f"sqlite:///{work / 'db.sqlite3'}",
            "MEDIA_ROOT": str(work / "media"),
            "REDIS_URL": "",
            "CELERY_BROKER_URL": "",
            "DEBUG": "1",
            "ALLOWED_HOSTS": "testserver,localhost,127.0.0.1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "PERF_JUDGE_KEY": "sk-perf",
            # The key policy (common/llm_policy.py): this key may go to the loopback model.
            "LLM_KEY_ENV_ALLOW": "PERF_JUDGE_KEY",
            "LLM_KEY_HOSTS": "PERF_JUDGE_KEY=127.0.0.1",
        }
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def cast(server_url: str) -> str:
    """A task, an uploader with a token and an agent, one active judge; the token."""
    from benchmark.accounts import api_token_create
    from judging.services.judges import judge_create
    from judging.services.rubrics import ensure_default_rubrics
    from tests.benchmark.factories import AgentFactory, TaskFactory, TeamFactory, UserFactory

    owner: Any = UserFactory()
    AgentFactory(name="perf-agent", team=TeamFactory(members=[owner]))
    TaskFactory(slug="iclr2025_perf")
    ensure_default_rubrics()
    judge_create(
        name="perf-judge",
        model="openai/perf-model",
        api_base=server_url,
        api_key_env="PERF_JUDGE_KEY",
        requests_per_minute=10_000,
    )
    return api_token_create(user=owner, name="perf").key


def best(runs: int, measure) -> float:
    return min(measure() for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fast", type=float, default=0.5, help="the fast model's seconds a call")
    parser.add_argument("--slow", type=float, default=5.0, help="the slow model's seconds a call")
    parser.add_argument("--uploads", type=int, default=3, help="uploads at each latency")
    parser.add_argument("--smoke", action="store_true", help="0.2 s and 2 s, one upload each")
    args = parser.parse_args()
    if args.smoke:
        args.fast, args.slow, args.uploads = 0.2, 2.0, 1
    work = Path(tempfile.mkdtemp(prefix="mlrbench-perf-upload-"))
    environment(work)

    from django.test import Client

    from common.tasks import background_wait
    from judging.models import Judgment, JudgmentStatus
    from tests.judging.helpers import review_answer
    from tests.support.fake_llm import FakeLLMServer, answer

    latency = {"seconds": args.fast}
    text = review_answer("proposal")
    server = FakeLLMServer(default=lambda body: answer(text, delay=latency["seconds"]))
    try:
        token = cast(server.url)
        client = Client()
        headers = {"Authorization": f"Token {token}"}
        counter = iter(range(10**6))

        def healthz() -> float:
            start = time.perf_counter()
            assert client.get("/healthz").status_code == 200
            return time.perf_counter() - start

        def upload() -> float:
            path = work / f"proposal-{next(counter)}.md"
            path.write_text(f"# Proposal {path.stem}\n\nA study of alignment, both ways.\n")
            start = time.perf_counter()
            with path.open("rb") as handle:
                response = client.post(
                    "/api/submissions/",
                    {"agent": "perf-agent", "task": "iclr2025_perf", "stage": "proposal",
                     "archive": handle},
                    headers=headers,
                )  # fmt: skip
            took = time.perf_counter() - start
            assert response.status_code == 201, response.content
            return took

        healthz()  # the first request loads the URL configuration
        upload()
        reference = best(5, healthz)
        answers = {}
        for label, seconds in (("fast", args.fast), ("slow", args.slow)):
            latency["seconds"] = seconds
            answers[label] = best(args.uploads, upload)
        print(f"GET /healthz: {reference * 1000:.1f} ms (best of 5)")
        for label, seconds in (("fast", args.fast), ("slow", args.slow)):
            print(
                f"upload, model {seconds:g} s a call: {answers[label] * 1000:.1f} ms, "
                f"{answers[label] / reference:.1f}x /healthz"
            )
        ratio = answers["slow"] / answers["fast"]
        print(f"slow model / fast model: {ratio:.2f}x (goal under 1.5x; the models: "
              f"{args.slow / args.fast:.0f}x)")  # fmt: skip
        if not background_wait(timeout=600):
            sys.exit("the background judging did not finish in 10 minutes")
        statuses = list(Judgment.objects.values_list("status", flat=True))
        judged = sum(status == JudgmentStatus.DONE for status in statuses)
        print(f"judged after the answers: {judged} of {len(statuses)} judgment(s) done")
        if not statuses or judged != len(statuses):
            sys.exit("not every upload was judged")
        if not args.smoke and ratio >= 1.5:
            sys.exit("the upload's answer waits for the model")
    finally:
        server.close()


if __name__ == "__main__":
    main()
