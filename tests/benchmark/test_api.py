import re

import pytest

from benchmark.services import tasks_import
from tests.benchmark.factories import TaskFactory
from tests.errors import error_messages

pytestmark = pytest.mark.django_db


def api_slugs(client, **params) -> list[str]:
    response = client.get("/api/tasks/", params)
    assert response.status_code == 200, response.content
    return sorted(item["slug"] for item in response.json()["results"])


def test_api_lists_tasks_with_pagination(client, mlrbench_data):
    tasks_import(path=mlrbench_data)

    first = client.get("/api/tasks/").json()
    assert first["count"] == 201
    assert len(first["results"]) == 50
    assert "description" not in first["results"][0]

    slugs: set[str] = set()
    url = "/api/tasks/"
    while url:
        page = client.get(url).json()
        slugs.update(item["slug"] for item in page["results"])
        url = page["next"]
    assert len(slugs) == 201


def test_api_filters_and_search(client):
    TaskFactory(slug="iclr2025_a", conference="iclr", year=2025, topic="ml_theory", title="Alpha")
    TaskFactory(slug="icml2024_b", conference="icml", year=2024, topic="ml_theory", title="Beta")
    TaskFactory(slug="icml2025_c", conference="icml", year=2025, topic="other", title="Gamma")

    assert api_slugs(client, conference="icml") == ["icml2024_b", "icml2025_c"]
    assert api_slugs(client, year=2025) == ["iclr2025_a", "icml2025_c"]
    assert api_slugs(client, topic="ml_theory") == ["iclr2025_a", "icml2024_b"]
    assert api_slugs(client, search="gamma") == ["icml2025_c"]
    assert api_slugs(client, conference="icml", year=2025) == ["icml2025_c"]


def test_api_rejects_a_bad_filter_with_400(client):
    response = client.get("/api/tasks/", {"conference": "aaai", "year": "soon"})
    assert response.status_code == 400
    assert set(error_messages(response)) == {"conference", "year"}


def test_api_task_detail(client):
    TaskFactory(slug="iclr2025_a", title="Alpha", description="# Alpha\n\nBody.")

    data = client.get("/api/tasks/iclr2025_a/").json()

    assert data["slug"] == "iclr2025_a"
    assert data["title"] == "Alpha"
    assert data["description"] == "# Alpha\n\nBody."
    assert data["page_url"] == "/tasks/iclr2025_a/"
    assert client.get("/api/tasks/iclr2025_nope/").status_code == 404


def test_api_is_read_only(client, admin_client):
    TaskFactory(slug="iclr2025_a")
    assert client.post("/api/tasks/", {"slug": "iclr2025_b"}).status_code in (401, 403)
    assert admin_client.delete("/api/tasks/iclr2025_a/").status_code == 405


def test_openapi_schema_describes_the_task_endpoints(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert "/api/tasks/" in schema["paths"]
    parameters = {p["name"] for p in schema["paths"]["/api/tasks/"]["get"]["parameters"]}
    assert {"conference", "year", "topic", "search", "page"} <= parameters


def test_docs_page_loads_its_assets_from_the_site_not_a_cdn(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any("swagger-ui" in asset for asset in assets)
    assert all(not asset.startswith(("http://", "https://", "//")) for asset in assets)
    for asset in assets:
        if asset.startswith("/static/"):
            assert client.get(asset).status_code == 200, asset
