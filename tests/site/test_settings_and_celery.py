import os
import subprocess
import sys

import pytest
from django.conf import settings

from judging.tasks import worker_warms_up
from mlrbench_site.celery import app
from tests.conftest import PROJECT_ROOT


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    """Run `code` with a bare environment plus `env`, as a fresh process would."""
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT_ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "mlrbench_site.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_secret_key_is_required_when_debug_is_off():
    result = run_python("import django; django.setup()", DEBUG="0")
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_a_negative_number_of_judge_calls_per_process_is_refused():
    result = run_python("import django; django.setup()", DEBUG="1", JUDGE_CALLS_PER_PROCESS="-1")
    assert result.returncode != 0
    assert "JUDGE_CALLS_PER_PROCESS must be 0 (no limit) or more" in result.stderr


def test_bare_defaults_are_sqlite_local_cache_and_eager_celery(tmp_path):
    code = (
        "import django; django.setup();"
        "from django.conf import settings as s;"
        "from mlrbench_site.celery import app;"
        "print(s.DATABASES['default']['ENGINE']);"
        "print(s.CACHES['default']['BACKEND']);"
        "print(app.conf.task_always_eager);"
        "print(s.BACKGROUND_THREADS);"
        "import os; print(os.environ['LITELLM_LOCAL_MODEL_COST_MAP'])"
    )
    result = run_python(code, DEBUG="1")
    assert result.returncode == 0, result.stderr
    engine, cache_backend, eager, threads, cost_map = result.stdout.split()
    assert engine == "django.db.backends.sqlite3"
    assert cache_backend.endswith("LocMemCache")
    # Eager, but after the answer: an upload never waits for its judges.
    assert eager == "True" and threads == "2"
    assert cost_map == "True"
    # django-axes' banner is not printed by every command.
    assert "AXES" not in result.stdout + result.stderr


def test_environment_switches_to_postgresql_and_redis():
    code = (
        "import django; django.setup();"
        "from django.conf import settings as s;"
        "from mlrbench_site.celery import app;"
        "print(s.DATABASES['default']['ENGINE'], s.CACHES['default']['BACKEND'],"
        " app.conf.task_always_eager, app.conf.broker_url, s.BACKGROUND_THREADS)"
    )
    result = run_python(
        code,
        DEBUG="0",
        SECRET_KEY="x" * 50,
        DATABASE_URL="postgres://u@db:5432/mlrbench",
        REDIS_URL="redis://cache:6379/1",
    )
    assert result.returncode == 0, result.stderr
    engine, cache_backend, eager, broker, threads = result.stdout.split()
    assert engine == "django.db.backends.postgresql"
    assert cache_backend.endswith("RedisCache")
    assert eager == "False"
    assert broker == "redis://cache:6379/1"
    assert threads == "0"  # a worker runs the tasks


def test_celery_app_has_the_named_queues_and_safe_delivery_settings():
    conf = app.conf
    assert {queue.name for queue in conf.task_queues} == {"judge", "gpu"}
    assert conf.task_default_queue == "judge"
    assert conf.task_serializer == "json" and conf.accept_content == ["json"]
    assert conf.worker_prefetch_multiplier == 1
    assert 0 < conf.task_soft_time_limit < conf.task_time_limit
    if settings.BROKER_IS_RABBITMQ:
        assert conf.broker_transport_options == {"confirm_publish": True}
    else:
        assert conf.broker_transport_options["visibility_timeout"] > conf.task_time_limit


BROKER_CONFIG = (
    "import django; django.setup();"
    "from mlrbench_site.celery import app; c = app.conf;"
    "print(sorted((q.name, q.exchange.type, str(q.queue_arguments)) for q in c.task_queues));"
    "print(sorted(c.broker_transport_options.items()));"
    "print(c.worker_detect_quorum_queues, c.broker_native_delayed_delivery_queue_type)"
)


def test_with_rabbitmq_the_queues_are_quorum_queues_and_publishing_waits_for_confirms():
    result = run_python(
        BROKER_CONFIG,
        DEBUG="1",
        REDIS_URL="redis://cache:6379/1",
        CELERY_BROKER_URL="amqp://guest:guest@rabbitmq:5672//",
    )
    assert result.returncode == 0, result.stderr
    queues, options, quorum = result.stdout.splitlines()
    quorum_args = str({"x-queue-type": "quorum"})
    assert queues == str([("gpu", "topic", quorum_args), ("judge", "topic", quorum_args)])
    # No Redis visibility timeout: RabbitMQ redelivers when the consumer goes away.
    assert options == str([("confirm_publish", True)])
    assert quorum == "True quorum"


def test_with_redis_the_queues_are_plain_and_the_visibility_timeout_outlasts_the_tasks():
    result = run_python(BROKER_CONFIG, DEBUG="1", REDIS_URL="redis://cache:6379/1")
    assert result.returncode == 0, result.stderr
    queues, options, _ = result.stdout.splitlines()
    assert queues == str([("gpu", "topic", "None"), ("judge", "topic", "None")])
    assert options == str([("visibility_timeout", 3600)])


def test_the_suite_runs_on_postgresql():
    assert settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


def test_the_test_settings_are_the_sites_but_for_what_a_test_run_changes():
    """Every setting of the site's, each the same, but the few test overrides."""
    import mlrbench_site.settings as site
    import mlrbench_site.settings.test as test

    assert os.environ["DJANGO_SETTINGS_MODULE"] == "mlrbench_site.settings.test"

    def names(module) -> set[str]:
        return {name for name in dir(module) if name.isupper()}

    assert names(test) == names(site)
    changed = {name for name in names(site) if getattr(test, name) != getattr(site, name)}
    # The key policy lets the suite's test key variables reach the loopback fake
    # model server (common/llm_policy.py; its own tests set the production defaults).
    expected = {"PASSWORD_HASHERS", "LLM_KEY_ENV_ALLOW", "LLM_KEY_HOSTS"}
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # A parallel run's worker has services of its own (settings/test.py): its
        # sandbox uids and work root always, its Redis database and broker but on
        # gw0 (database N - 0 is N's own).
        assert {"SANDBOX_UID_BASE", "EXPERIMENT_WORK_ROOT"} <= changed
        changed -= {
            "SANDBOX_UID_BASE",
            "EXPERIMENT_WORK_ROOT",
            "REDIS_URL",
            "CACHES",
            "CELERY_BROKER_URL",
        }
    assert changed == expected
    assert settings.PASSWORD_HASHERS == ["django.contrib.auth.hashers.MD5PasswordHasher"]


def test_each_task_is_routed_to_its_own_queue_and_to_no_other():
    """Published through the real broker, an experiment run lands in `gpu` and a
    judgment in `judge`, each once (the queues do not share an exchange key)."""
    from experiments.tasks import experiment_run_task as experiment
    from judging.tasks import judgment_run_task as judgment

    for name in ("judge", "gpu"):
        queue = app.amqp.queues[name]
        assert (queue.exchange.name, queue.routing_key) == (name, name)
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        for queue in app.amqp.queues.values():
            queue(channel).declare()
            queue(channel).purge()
        try:
            with app.producer_or_acquire() as producer:
                experiment.apply_async((0,), producer=producer)
                judgment.apply_async((0,), producer=producer)
                judgment.apply_async((0,), producer=producer)
            # A passive declare answers the queue's length on Redis and RabbitMQ alike.
            lengths = {
                name: channel.queue_declare(queue=name, passive=True).message_count
                for name in ("gpu", "judge")
            }
        finally:
            for queue in app.amqp.queues.values():
                queue(channel).purge()
    assert lengths == {"gpu": 1, "judge": 2}


def test_a_database_pool_is_one_setting_away_and_a_negative_size_is_refused():
    code = (
        "import django; django.setup();"
        "from django.conf import settings as s;"
        "d = s.DATABASES['default'];"
        "print(d['OPTIONS']['pool']['max_size'], d['CONN_MAX_AGE'])"
    )
    pooled = run_python(
        code,
        DEBUG="1",
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/x",
        DATABASE_POOL_SIZE="3",
        CONN_MAX_AGE="60",
    )
    assert pooled.returncode == 0, pooled.stderr
    assert pooled.stdout.split() == ["3", "0"]
    refused = run_python("import django; django.setup()", DEBUG="1", DATABASE_POOL_SIZE="-1")
    assert refused.returncode != 0
    assert "DATABASE_POOL_SIZE must be 0 (no pool) or more" in refused.stderr


def test_the_urls_import_without_collected_static_files():
    """A worker or a script imports the URLs with hashed static files configured
    and no manifest (nothing collected): nothing there may need the manifest."""
    result = run_python(
        "import django; django.setup(); import mlrbench_site.urls",
        DEBUG="0",
        SECRET_KEY="test-only",
        STATIC_MANIFEST="1",
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("queues", "warms_up"),
    [(["judge"], True), (["gpu", "judge"], True), (["gpu"], False)],
)
def test_a_worker_warms_up_the_llm_client_only_when_it_takes_the_judge_queue(queues, warms_up):
    # A worker's queues from -Q, or every queue the app declares (judge among them).
    assert worker_warms_up(queues) is warms_up
    assert worker_warms_up(app.amqp.queues) is True
