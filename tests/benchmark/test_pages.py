import re

import pytest
from django.urls import reverse

from benchmark.models import Task
from benchmark.services import tasks_import
from tests.benchmark.factories import TaskFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalogue(mlrbench_data):
    tasks_import(path=mlrbench_data)


def slugs_on_page(response) -> list[str]:
    return re.findall(r'<tr data-slug="([^"]+)"', response.content.decode())


def test_home_page_counts_the_catalogue(client, catalogue):
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<span class="number" data-testid="task-count">201</span>' in html
    assert '<span class="number">73</span> from 2023' in html
    assert '<span class="number">37</span> from 2025' in html


def test_task_list_filters_by_conference_year_and_topic(client):
    TaskFactory(slug="iclr2025_a", conference="iclr", year=2025, topic="ml_theory")
    TaskFactory(slug="iclr2024_b", conference="iclr", year=2024, topic="ml_theory")
    TaskFactory(slug="icml2025_c", conference="icml", year=2025, topic="computer_vision")

    url = reverse("benchmark:task-list")
    assert sorted(slugs_on_page(client.get(url, {"conference": "iclr"}))) == [
        "iclr2024_b",
        "iclr2025_a",
    ]
    assert sorted(slugs_on_page(client.get(url, {"year": 2025}))) == ["iclr2025_a", "icml2025_c"]
    assert slugs_on_page(client.get(url, {"topic": "computer_vision"})) == ["icml2025_c"]
    assert slugs_on_page(client.get(url, {"conference": "iclr", "year": 2025})) == ["iclr2025_a"]


def test_task_list_search_matches_title_and_description(client):
    TaskFactory(slug="iclr2025_a", title="Backdoor attacks", description="# Backdoor attacks")
    TaskFactory(slug="iclr2025_b", title="Other", description="# Other\n\nabout backdoors too")
    TaskFactory(slug="iclr2025_c", title="Unrelated", description="# Unrelated")

    response = client.get(reverse("benchmark:task-list"), {"search": "backdoor"})

    assert sorted(slugs_on_page(response)) == ["iclr2025_a", "iclr2025_b"]


def test_task_list_paginates_and_keeps_the_filters(client, catalogue):
    url = reverse("benchmark:task-list")
    first = client.get(url, {"year": 2024})
    assert first.context["page"].paginator.count == 91
    assert len(slugs_on_page(first)) == 25
    assert "?year=2024&amp;page=2" in first.content.decode()

    seen = set()
    for number in range(1, 5):
        seen.update(slugs_on_page(client.get(url, {"year": 2024, "page": number})))
    assert seen == set(Task.objects.filter(year=2024).values_list("slug", flat=True))


def test_task_list_with_a_bad_filter_says_so(client, catalogue):
    response = client.get(reverse("benchmark:task-list"), {"conference": "aaai"})
    assert response.status_code == 200
    assert 'role="alert"' in response.content.decode()
    assert slugs_on_page(response) == []


def test_task_page_renders_the_description(client, catalogue):
    response = client.get(reverse("benchmark:task-detail", kwargs={"slug": "iclr2025_bi_align"}))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>Workshop on Bidirectional Human-AI Alignment</h1>" in html
    assert "<h2>" in html  # markdown headings became HTML


def test_unknown_task_is_a_404(client):
    assert client.get("/tasks/iclr2025_nope/").status_code == 404


XSS_TASK = """# Harmless title <script>alert('title')</script>

<script>window.pwned = 1</script>

<img src="x.png" onerror="window.pwned = 2">

[click me](javascript:window.pwned=3) and [data](data:text/html;base64,PHNjcmlwdD4=)

<a href="javascript:alert(1)" onclick="alert(2)">raw link</a>

<iframe src="https://example.org"></iframe>
"""


def test_scripts_handlers_and_javascript_links_never_reach_the_page(client, write_task_file):
    write_task_file("iclr2025_xss.md", XSS_TASK)
    tasks_import(path=write_task_file.folder)

    html = client.get("/tasks/iclr2025_xss/").content.decode()
    description = html.split('data-testid="task-description">', 1)[1]

    assert "<script" not in description.lower()
    assert "onerror" not in description.lower()
    assert "onclick" not in description.lower()
    assert "javascript:" not in description.lower()
    assert "data:text/html" not in description.lower()
    assert "<iframe" not in description.lower()
    # The harmless parts are kept.
    assert "click me" in description and "raw link" in description
    # And the title, shown outside the markdown, is escaped by the template.
    assert "&lt;script&gt;alert(&#x27;title&#x27;)&lt;/script&gt;" in html
