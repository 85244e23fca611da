import pytest
from django.db import OperationalError, connection

pytestmark = pytest.mark.django_db


@pytest.mark.backends  # the real broker: Redis, then RabbitMQ on the second leg
def test_healthz_is_200_with_database_and_broker_up(client, settings):
    # CI's legs: Redis, then RabbitMQ; both are real servers.
    assert settings.CELERY_BROKER_URL.startswith(("redis://", "amqp://")), "a real broker"

    response = client.get("/healthz")

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"] == {"ok": True}
    assert body["checks"]["broker"] == {"ok": True}


@pytest.mark.parametrize("scheme", ["redis", "amqp"])
def test_healthz_is_503_when_the_broker_port_is_closed(client, settings, closed_port, scheme):
    settings.CELERY_BROKER_URL = f"{scheme}://127.0.0.1:{closed_port}/0"

    response = client.get("/healthz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["broker"]["ok"] is False
    assert "Connection" in body["checks"]["broker"]["error"]


def test_healthz_without_a_broker_reports_eager_mode(client, settings):
    settings.CELERY_BROKER_URL = ""

    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json()["checks"]["broker"] == {"ok": True, "configured": False, "mode": "eager"}


def test_healthz_is_503_when_the_database_fails(client, monkeypatch):
    def broken_cursor(*args, **kwargs):
        raise OperationalError("database is down")

    # The database check is the only caller of cursor() during this request.
    monkeypatch.setattr(connection, "cursor", broken_cursor)

    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["checks"]["database"] == {
        "ok": False,
        "error": "OperationalError: database is down",
    }
