"""Issue 39, finding 2: a researcher loading a release was throttled by the
full export's 30-per-hour budget, and the README's download loop saved the 429
body as `croissant.json`. Release files are static, cacheable responses with a
budget of their own; a 429 says which limit and when to come back; the
docs' recipe (docs/releases.md) stops on anything but a 200."""

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.benchmark.factories import AgentFactory
from tests.judging.factories import JudgeFactory
from tests.support.docs import user_docs_text

from .test_releases import judged

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(db):
    judge = JudgeFactory(name="judge-a")
    judged(AgentFactory(name="alpha"), judge, 7)
    judged(AgentFactory(name="beta"), judge, 4)
    call_command("release", "create", "v1", stdout=io.StringIO())
    return "v1"


def _urls(client, name: str) -> list[str]:
    listed = client.get(f"/api/releases/{name}/").json()["files"]
    return [
        f"/api/releases/{name}/",
        f"/api/releases/{name}/export.zip",
        *(f["url"] for f in listed),
    ]


def test_loading_a_release_many_times_leaves_the_export_budget_alone(client, release):
    """With the default rates: ten loads of every file (more requests than the
    export's whole hour) all answer 200, and the live export still answers."""
    urls = _urls(client, release)
    codes = [client.get(url).status_code for _ in range(10) for url in urls]
    assert len(codes) > 30 and set(codes) == {200}
    assert client.get("/api/export/").status_code == 200


def test_release_files_are_static_cacheable_answers(client, release):
    for url in _urls(client, release):
        first = client.get(url)
        assert first.status_code == 200, url
        assert re.fullmatch(r'"[0-9a-f]{64}(-zip)?"', first["ETag"]), url
        cache_control = first["Cache-Control"]
        assert "immutable" in cache_control and "max-age=31536000" in cache_control
        again = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
        assert again.status_code == 304 and again.content == b"", url
        assert again["ETag"] == first["ETag"]


def test_a_429_says_which_limit_and_when_to_come_back(client, release, rates):
    rates(release_files="2/minute")
    url = f"/api/releases/{release}/files/croissant.json"
    assert [client.get(url).status_code for _ in range(2)] == [200, 200]
    refused = client.get(url)
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 60
    (error,) = refused.json()["errors"]
    assert error["code"] == "throttled"
    assert "release files" in error["message"] and "2 per minute" in error["message"]
    assert f"try again in {refused['Retry-After']} s" in error["message"]
    # Another scope's budget is untouched.
    assert client.get("/api/export/").status_code == 200


def _docs_download_recipe(site: str, name: str) -> str:
    blocks = re.findall(r"```sh\n(\s*set -eo pipefail.*?)```", user_docs_text(), re.S)
    assert len(blocks) == 1, "the docs' one release download recipe"
    (block,) = blocks
    lines = [
        line.strip()
        for line in block.splitlines()
        if "huggingface-cli" not in line  # the upload is the hub's, not the site's
    ]
    return "\n".join(lines).replace("https://SITE", site).replace("NAME", name)


@pytest.mark.django_db(transaction=True)
def test_the_docs_download_recipe_fails_loudly_on_a_429(live_server, tmp_path, rates):
    judge = JudgeFactory(name="judge-a")
    judged(AgentFactory(name="alpha"), judge, 7)
    call_command("release", "create", "v1", stdout=io.StringIO())
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    script = _docs_download_recipe(live_server.url, "v1")

    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "v1" / "croissant.json").read_bytes().startswith(b"{")
    assert "errors" not in (tmp_path / "v1" / "croissant.json").read_text()[:200]

    rates(release_files="1/minute")
    again = tmp_path / "again"
    again.mkdir()
    failed = subprocess.run(
        ["bash", "-c", script], cwd=again, env=env, capture_output=True, text=True, timeout=120
    )
    assert failed.returncode != 0
    assert "429" in failed.stderr
