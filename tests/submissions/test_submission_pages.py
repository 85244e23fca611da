"""The pages an agent builder and a reader see: upload form, submission page,
files, accounts and tokens."""

import re

import pytest

from benchmark.models import ApiToken
from submissions.models import DerivedArtifact, DerivedKind, Submission
from tests.benchmark.factories import AgentFactory
from tests.benchmark.runs import PAPER, PNG, SAMPLE_TASK, sample_run, zip_entries, zip_folder
from tests.errors import error_messages
from tests.submissions.factories import archive_intake

pytestmark = pytest.mark.django_db

MALICIOUS_PAPER = b"""# Totally normal paper

<script>window.__xss = 1; alert(1)</script>
<img src="x" onerror="window.__xss = 2">
<a href="javascript:window.__xss = 3">click me</a>
[markdown link](javascript:window.__xss=4)
![data image](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)
<iframe srcdoc="<script>parent.__xss=5</script>"></iframe>
<svg onload="window.__xss=6"></svg>
<p style="background:url(javascript:alert(1))" onclick="window.__xss=7">styled</p>
<a href="data:text/html,<script>alert(1)</script>">data link</a>
<object data="javascript:alert(1)"></object>
Math stays math: $a_1 < b_2$ and $$\\frac{<script>}{x}$$

![a figure](fig.png) and ![remote](https://tracker.example.org/pixel.png)
"""


def test_the_submission_page_shows_paper_figures_documents_tree_log_and_cost(
    client, media_root, agent, task, mlrbench_data, tmp_path
):
    submission = archive_intake(
        agent, task, zip_folder(sample_run(mlrbench_data, "o4-mini"), tmp_path / "run.zip")
    )

    response = client.get(f"/submissions/{submission.pk}/")

    assert response.status_code == 200
    assert "script-src 'self'" in response["Content-Security-Policy"]
    html = response.content.decode()
    paper = html.split('data-testid="paper"', 1)[1].split("</article>", 1)[0]
    figures = re.findall(r'<img[^>]*src="([^"]+)"', paper)
    assert f"/submissions/{submission.pk}/raw/results/resource_rewards.png" in figures
    figure = client.get(figures[0])
    assert figure["Content-Type"] == "image/png"
    assert figure["X-Content-Type-Options"] == "nosniff"
    assert 'class="math math-inline"' in paper  # formulas left for KaTeX
    assert 'data-testid="document-idea"' in html and 'data-testid="document-proposal"' in html
    assert "claude_code/run_experiments.py" in html  # in the file tree
    tail = html.split('data-testid="log-tail">', 1)[1].split("</pre>", 1)[0]
    log = (sample_run(mlrbench_data, "o4-mini") / "results/log.txt").read_text()
    assert log.strip().splitlines()[-1].strip()[:40] in tail
    # o4-mini is priced by the site's shipped table (a price table comes before litellm's,
    # whose rates for it are the same), the literature review at the search model it ran
    # on (as MLR-Bench's performance_cost.py); the trace gives Claude Code's own cost.
    assert "$0.0822" in html and "$0.5534 in 603 s" in html
    assert "<td>lit</td><td>gpt-4o-search-preview-2025-03-11</td>" in html
    assert "https://platform.openai.com/docs/pricing; the rates of MLR-Bench" in html
    # KaTeX is served by the site, not a CDN.
    assert re.search(r'<script src="/static/vendor/katex/katex\.min(\.[0-9a-f]+)?\.js">', html)


def test_a_model_litellm_does_not_know_costs_unknown_not_zero(client, media_root, task, tmp_path):
    agent = AgentFactory(base_model="some-private-model-v0")
    archive = zip_entries(
        tmp_path / "run.zip",
        {
            "results/paper.md": PAPER,
            "idea_token_usage.json": b'{"input_tokens": 5, "output_tokens": 7}',
        },
    )
    submission = archive_intake(agent, task, archive)

    html = client.get(f"/submissions/{submission.pk}/").content.decode()

    assert submission.llm_cost_usd is None
    assert re.search(r'data-testid="llm-cost">\s*unknown', html)
    assert "some-private-model-v0" in html


def test_uploaded_html_never_reaches_the_page_as_live_html(
    client, media_root, agent, task, tmp_path
):
    archive = zip_entries(
        tmp_path / "run.zip", {"results/paper.md": MALICIOUS_PAPER, "results/fig.png": PNG}
    )
    submission = archive_intake(agent, task, archive)

    html = client.get(f"/submissions/{submission.pk}/").content.decode()
    paper = html.split('data-testid="paper"', 1)[1].split("</article>", 1)[0]

    for needle in (
        "<script",
        "onerror",
        "onload",
        "onclick",
        "javascript:",
        "data:",
        "<iframe",
        "<svg",
        "<object",
        "style=",
        "tracker.example.org",
    ):
        assert needle not in paper.lower(), needle
    assert f'src="/submissions/{submission.pk}/raw/results/fig.png"' in paper
    assert "&lt;script&gt;" in paper  # the formula's text, escaped


@pytest.mark.parametrize(
    ("path", "data", "content_type", "inline"),
    [
        ("results/fig.png", PNG, "image/png", True),
        ("results/log.txt", b"<script>alert(1)</script>", "text/plain; charset=utf-8", True),
        ("results/page.html", b"<script>alert(1)</script>", "application/octet-stream", False),
        ("results/drawing.svg", b"<svg onload='alert(1)'/>", "application/octet-stream", False),
    ],
)
def test_artifacts_are_served_inline_only_as_images_and_plain_text(
    client, media_root, agent, task, tmp_path, path, data, content_type, inline
):
    archive = zip_entries(tmp_path / "run.zip", {"results/paper.md": PAPER, path: data})
    submission = archive_intake(agent, task, archive)

    response = client.get(f"/submissions/{submission.pk}/raw/{path}")

    assert response.status_code == 200
    assert response["Content-Type"] == content_type
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response["Content-Security-Policy"]
    disposition = response["Content-Disposition"]
    assert disposition.startswith("inline" if inline else "attachment")
    assert client.get(f"/submissions/{submission.pk}/raw/../../etc/passwd").status_code == 404


def test_a_code_file_is_shown_highlighted(client, media_root, agent, task, tmp_path):
    archive = zip_entries(
        tmp_path / "run.zip",
        {"results/paper.md": PAPER, "claude_code/main.py": b"def train():\n    return 42\n"},
    )
    submission = archive_intake(agent, task, archive)

    response = client.get(f"/submissions/{submission.pk}/files/claude_code/main.py")

    assert response.status_code == 200
    assert '<span class="k">def</span>' in response.content.decode()


def test_the_upload_form_without_javascript(client, media_root, owner, agent, task, tmp_path):
    assert client.get("/submissions/new/").status_code == 302  # sign in first
    client.force_login(owner)
    page = client.get("/submissions/new/").content.decode()
    assert "my-agent" in page and SAMPLE_TASK in page

    bad = zip_entries(tmp_path / "bad.zip", {"claude_code/main.py": b"print(1)"})
    with bad.open("rb") as handle:
        refused = client.post(
            "/submissions/new/",
            {"agent": agent.pk, "task": SAMPLE_TASK, "stage": "paper", "archive": handle},
        )
    assert refused.status_code == 400
    assert "the paper stage needs a paper" in refused.content.decode()
    assert Submission.objects.count() == 0

    good = zip_entries(tmp_path / "good.zip", {"results/paper.md": PAPER})
    with good.open("rb") as handle:
        stored = client.post(
            "/submissions/new/",
            {"agent": agent.pk, "task": SAMPLE_TASK, "stage": "paper", "archive": handle},
        )
    submission = Submission.objects.get()
    assert stored.status_code == 302 and stored["Location"] == f"/submissions/{submission.pk}/"
    assert submission.uploader == owner and submission.source == "upload"


def test_an_agent_of_another_team_is_not_offered_nor_accepted(
    client, media_root, owner, task, tmp_path
):
    other = AgentFactory(name="not-yours")
    client.force_login(owner)
    archive = zip_entries(tmp_path / "run.zip", {"results/paper.md": PAPER})
    with archive.open("rb") as handle:
        response = client.post(
            "/submissions/new/",
            {"agent": other.pk, "task": SAMPLE_TASK, "stage": "paper", "archive": handle},
            HTTP_ACCEPT="application/json",
        )
    assert response.status_code == 400
    assert "agent" in error_messages(response)
    assert Submission.objects.count() == 0


def test_a_builder_creates_a_team_an_agent_and_a_token_shown_once(client, owner):
    client.force_login(owner)
    client.post("/account/teams/", {"name": "Lovelace Lab"})
    team = owner.teams.get()
    response = client.post(
        "/account/agents/",
        {
            "team": team.pk,
            "name": "analytical-engine-1.0",
            "display_name": "Analytical Engine",
            "base_model": "o4-mini",
            "model_family": "openai",
            "links": "https://example.org/engine",
        },
    )
    assert response.status_code == 302
    agent = team.agents.get()
    assert agent.links == ["https://example.org/engine"]

    bad = client.post(
        "/account/agents/",
        {"team": team.pk, "name": "Bad Name!", "display_name": "x", "model_family": "openai"},
    )
    assert bad.status_code == 400 and "lower-case" in bad.content.decode()

    created = client.post("/account/tokens/", {"name": "laptop"})
    key = re.search(r'data-testid="new-token-key">([^<]+)<', created.content.decode()).group(1)
    token = ApiToken.objects.get()
    assert key.startswith(token.prefix) and token.key_sha256 not in created.content.decode()
    assert key not in client.get("/account/").content.decode()  # never shown again
    api = client.get("/api/agents/", HTTP_AUTHORIZATION=f"Token {key}")
    assert api.status_code == 200

    client.post(f"/account/tokens/{token.pk}/revoke/")
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_the_submission_list_and_agent_pages(client, media_root, agent, task, tmp_path):
    archive_intake(agent, task, zip_entries(tmp_path / "run.zip", {"results/paper.md": PAPER}))

    listing = client.get("/submissions/", {"stage": "end2end"}).content.decode()
    assert "1 submission" in listing and "my-agent" in listing
    assert "0 submissions" in client.get("/submissions/", {"stage": "idea"}).content.decode()
    assert client.get("/agents/my-agent/").status_code == 200


def test_source_is_highlighted_once_at_intake_and_no_view_runs_a_lexer(
    client, media_root, agent, task, tmp_path, monkeypatch, settings
):
    """Issue 32, finding 2: Pygments ran per request on up to 1 MiB (a Makefile
    of `_` is quadratic in its lexer). It runs once, at intake, within each
    file's time; a slow file and one past the size limit show plain text."""
    import pygments

    settings.SOURCE_HIGHLIGHT_FILE_SECONDS = 0.5
    settings.SOURCE_HIGHLIGHT_MAX_BYTES = 64 * 1024
    archive = zip_entries(
        tmp_path / "run.zip",
        {
            "results/paper.md": PAPER,
            "code/main.py": b"def train():\n    return 42\n",
            "code/Makefile": b"_" * 24_000,  # seconds of the Makefile lexer
            "code/big.py": b"x = 1  # <b>\n" * 6_000,  # past the size limit
        },
    )
    submission = archive_intake(agent, task, archive)
    stored = set(
        DerivedArtifact.objects.filter(
            artifact__submission=submission, kind=DerivedKind.SOURCE_HTML
        ).values_list("artifact__path", flat=True)
    )
    assert stored == {"code/main.py"}

    def no_lexer(*args, **kwargs):
        raise AssertionError("a page view ran a lexer")

    monkeypatch.setattr(pygments, "highlight", no_lexer)
    base = f"/submissions/{submission.pk}/files/code"
    assert '<span class="k">def</span>' in client.get(f"{base}/main.py").content.decode()
    makefile = client.get(f"{base}/Makefile").content.decode()
    assert '<pre class="plain">' + "_" * 100 in makefile
    big = client.get(f"{base}/big.py").content.decode()
    assert "x = 1  # &lt;b&gt;" in big and "# <b>" not in big
