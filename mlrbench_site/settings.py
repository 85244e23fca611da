"""Settings for the MLR-Bench site, read from the environment (django-environ).

Every value has a default that runs on a bare machine: SQLite, a local-memory
cache and Celery in eager mode. PostgreSQL and Redis are one variable away.
See `.env.example` for the full list.
"""

import os
from pathlib import Path
from typing import Any

import environ
from csp import constants as csp_constants
from django.conf import global_settings
from django.core.exceptions import ImproperlyConfigured
from kombu import Exchange, Queue

# litellm downloads its model price table at import unless told otherwise; the
# site has no internet in production sandboxes, and prices must not change
# under a running benchmark, so the bundled table is used everywhere.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

BASE_DIR = Path(__file__).resolve().parent.parent


class _RecordingEnv(environ.Env):
    """Remembers every variable the settings read (`SITE_ENV_NAMES`): no agent
    run may name one of them as its API key variable (`AGENT_RUN_KEY_ENV_ALLOW`)."""

    names: set[str] = set()

    def get_value(self, var: str, *args: Any, **kwargs: Any) -> Any:
        self.names.add(var)
        return super().get_value(var, *args, **kwargs)


env = _RecordingEnv()
# Local settings: scripts/quickstart.sh writes `.env` (ignored by git) with what
# it used, so that every command works from a new shell; MLRBENCH_ENV_FILE names
# another file. Variables already in the environment win over the file.
ENV_FILE = Path(os.environ.get("MLRBENCH_ENV_FILE") or BASE_DIR / ".env")
if ENV_FILE.is_file():
    env.read_env(ENV_FILE)

DEBUG = env.bool("DEBUG", default=False)

SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (see .env.example).")
    # Only ever used with DEBUG on, for local development.
    SECRET_KEY = "insecure-development-only-key-never-use-in-production"  # noqa: S105

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# The site's own apps, in the order of their arrows (README, "What is where").
# pyproject.toml's packages and the Dockerfile name the same list, with the
# three packages that are not apps (mlrbench_site, common, sandbox); a test checks it.
PROJECT_APPS = ["benchmark", "experiments", "judging", "agent_runs", "reviews", "leaderboard"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    *PROJECT_APPS,
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "common.middleware.NulRefusalMiddleware",
    "common.middleware.StalenessMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "common.throttling.PageThrottleMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its answer.
    "axes.middleware.AxesMiddleware",
]

# Django's own hashers unless the environment names others: the test suite names
# a fast one for itself and the processes it starts (tests/conftest.py).
PASSWORD_HASHERS = env.list("PASSWORD_HASHERS", default=global_settings.PASSWORD_HASHERS)

# Repeated failed sign-ins lock the account out from that address (django-axes).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=10)
AXES_COOLOFF_TIME = env.float("AXES_COOLOFF_HOURS", default=1.0)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True

ROOT_URLCONF = "mlrbench_site.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "mlrbench_site.context_processors.navigation",
            ],
        },
    },
]

WSGI_APPLICATION = "mlrbench_site.wsgi.application"
ASGI_APPLICATION = "mlrbench_site.asgi.application"

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
}
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=0))
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The quick start's database: write-ahead logging lets pages read while an
    # import writes, and `synchronous=NORMAL` (with WAL, a crash of the site
    # loses no committed transaction; a power cut or an OS crash at most the
    # last ones) spares each commit an fsync, most of an import's time there.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "init_command", "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
    )
# A pool of PostgreSQL connections per process (Django's psycopg pool), for
# worker processes with many threads: a thread takes a connection only while
# it uses the database (a judge run gives its own back while it waits on the
# judge), so 32 calls in flight need a few connections, not 32. 0: no pool.
DATABASE_POOL_SIZE = env.int("DATABASE_POOL_SIZE", default=0)
if DATABASE_POOL_SIZE < 0:
    raise ImproperlyConfigured("DATABASE_POOL_SIZE must be 0 (no pool) or more.")
if DATABASE_POOL_SIZE and DATABASES["default"]["ENGINE"].endswith("postgresql"):
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": DATABASE_POOL_SIZE,
        "timeout": env.float("DATABASE_POOL_TIMEOUT", default=60.0),
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps connections; Django wants 0
# A migrated PostgreSQL database the test database is copied from (CREATE
# DATABASE ... TEMPLATE) instead of running every migration again; CI makes one
# for its test legs and perf scripts (scripts/database_template.py).
if env.str("TEST_DATABASE_TEMPLATE", default=""):
    DATABASES["default"]["TEST"] = {"TEMPLATE": env.str("TEST_DATABASE_TEMPLATE")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Redis serves the shared cache and, unless CELERY_BROKER_URL names another
# (RabbitMQ), the Celery broker. Unset means no broker: tasks run eagerly and
# the cache is local.
REDIS_URL = env.str("REDIS_URL", default="")
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL)

if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": env.str("CACHE_KEY_PREFIX", default="mlrbench"),
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Celery: the row in the database is the truth, so tasks are acknowledged
# late and claim their row; a lost worker's message is redelivered (Redis: after
# the visibility timeout, which must outlast the hard time limit).
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# Two named queues: `judge` (LLM calls, I/O-bound) and `gpu` (experiment jobs,
# one per GPU). Tasks reach them through CELERY_TASK_ROUTES, never by an app
# naming a queue itself.
JUDGE_QUEUE = "judge"
GPU_QUEUE = "gpu"
CELERY_TASK_DEFAULT_QUEUE = JUDGE_QUEUE
# The broker is Redis (`redis://`) or RabbitMQ (`amqp://`). With RabbitMQ the
# queues are durable quorum queues (replicated, at-least-once through a broker
# restart) and every publish waits for the broker's confirm. Redis stays the
# cache, the judges' rate-limit window and the GPU hosts' announcements
# (REDIS_URL), whichever broker carries the messages.
BROKER_IS_RABBITMQ = CELERY_BROKER_URL.startswith(("amqp://", "amqps://", "pyamqp://"))
# Each queue has its own exchange and routing key. A bare Queue(name) gets
# Celery's default exchange and key, the same for both, and a message for one
# queue was then also delivered to the other (an experiment run taken by a
# judge worker, a judgment by a gpu worker). Topic exchanges, not direct: on a
# key without wildcards they route alike, and RabbitMQ's native delayed
# delivery (countdowns and retries' backoff on quorum queues, which cannot
# hold a message back for a worker) needs them.
CELERY_TASK_QUEUES = tuple(
    Queue(
        name,
        Exchange(name, type="topic"),
        routing_key=name,
        queue_arguments={"x-queue-type": "quorum"} if BROKER_IS_RABBITMQ else None,
    )
    for name in (JUDGE_QUEUE, GPU_QUEUE)
)
# Quorum queues refuse a global prefetch; Celery sees them and uses a
# per-consumer one, and declares the delayed-delivery queues as quorum too.
CELERY_WORKER_DETECT_QUORUM_QUEUES = True
CELERY_BROKER_NATIVE_DELAYED_DELIVERY_QUEUE_TYPE = "quorum"
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=15 * 60)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=20 * 60)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
if BROKER_IS_RABBITMQ:
    # A publish returns once RabbitMQ has the message (py-amqp's confirms). An
    # unacknowledged delivery is redelivered when its worker's connection
    # closes; RabbitMQ's consumer_timeout must outlast the longest task (README).
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {"confirm_publish": True}
else:
    # Redis redelivers an unacknowledged message after the visibility timeout.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env.int(
            "CELERY_VISIBILITY_TIMEOUT", default=CELERY_TASK_TIME_LIMIT * 3
        ),
    }
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env.path("STATIC_ROOT", default=BASE_DIR / "staticfiles")
MEDIA_URL = "media/"
MEDIA_ROOT = env.path("MEDIA_ROOT", default=BASE_DIR / "media")
# In production static files get content-hashed names (cache forever) and
# need `collectstatic`; the test suite's live server serves plain names from
# the finders, so it turns the manifest off (STATIC_MANIFEST=0).
STATIC_MANIFEST = env.bool("STATIC_MANIFEST", default=not DEBUG)
# Without the manifest (development, tests) WhiteNoise serves straight from the
# apps' static folders, so no collectstatic is needed there.
WHITENOISE_USE_FINDERS = not STATIC_MANIFEST
# Artifacts (uploads, derived HTML and text, experiment outputs and logs,
# release bundles) go through the storage API only, so web and worker hosts
# can share an S3-compatible bucket instead of one folder. django-storages'
# own setting names, read from the environment.
STORAGE_BACKEND = env.str("STORAGE_BACKEND", default="filesystem")
# Object requests in flight at once per process (an intake's uploads and moves).
STORAGE_THREADS = env.int("STORAGE_THREADS", default=8)
if STORAGE_THREADS < 1:
    raise ImproperlyConfigured("STORAGE_THREADS must be 1 or more.")
if STORAGE_BACKEND not in {"filesystem", "s3"}:
    raise ImproperlyConfigured("STORAGE_BACKEND must be 'filesystem' or 's3'.")
AWS_STORAGE_BUCKET_NAME = env.str("AWS_STORAGE_BUCKET_NAME", default="mlrbench")
AWS_S3_ENDPOINT_URL = env.str("AWS_S3_ENDPOINT_URL", default="") or None
AWS_S3_REGION_NAME = env.str("AWS_S3_REGION_NAME", default="us-east-1")
AWS_ACCESS_KEY_ID = env.str("AWS_ACCESS_KEY_ID", default="") or None
AWS_SECRET_ACCESS_KEY = env.str("AWS_SECRET_ACCESS_KEY", default="") or None
AWS_S3_ADDRESSING_STYLE = env.str("AWS_S3_ADDRESSING_STYLE", default="path")
# Artifacts are private: every download goes through the site's views, which
# set the type, disposition and nosniff headers. Artifact names are chosen by
# the site (submissions/<id>/<path>), so a write replaces, never renames.
AWS_DEFAULT_ACL = None
AWS_QUERYSTRING_AUTH = True
AWS_S3_FILE_OVERWRITE = True
AWS_S3_SIGNATURE_VERSION = "s3v4"
# An object read (a download, a log's tail) is buffered in memory up to this
# size, then in a temporary file: a large artifact never fills a worker's RAM.
AWS_S3_MAX_MEMORY_SIZE = env.int("AWS_S3_MAX_MEMORY_SIZE", default=8 * 1024 * 1024)
AWS_LOCATION = env.str("AWS_LOCATION", default="")
if STORAGE_BACKEND == "s3":
    from botocore.config import Config

    # django-storages' own client settings, with a connection for each storage
    # thread (`common.storage.objects_each`), whatever their number.
    AWS_S3_CLIENT_CONFIG = Config(
        s3={"addressing_style": AWS_S3_ADDRESSING_STYLE},
        signature_version=AWS_S3_SIGNATURE_VERSION,
        max_pool_connections=STORAGE_THREADS + 4,
    )
    from boto3.s3.transfer import TransferConfig

    # The storage threads already send objects side by side: one upload needs
    # no thread pool of its own (s3transfer starts one per object otherwise).
    AWS_S3_TRANSFER_CONFIG = TransferConfig(use_threads=False)
_DEFAULT_STORAGE: dict[str, Any] = (
    {"BACKEND": "storages.backends.s3.S3Storage"}
    if STORAGE_BACKEND == "s3"
    else {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"allow_overwrite": True},
    }
)
STORAGES = {
    "default": _DEFAULT_STORAGE,
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if STATIC_MANIFEST
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}


def _default_mlrbench_data() -> str:
    sibling = BASE_DIR.parent / "shared" / "mlrbench"
    return str(sibling) if sibling.is_dir() else ""


# Where a clone of the MLR-Bench repository (or the shared sample) lives.
MLRBENCH_DATA = env.str("MLRBENCH_DATA", default=_default_mlrbench_data())

REST_FRAMEWORK: dict[str, Any] = {
    "DEFAULT_SCHEMA_CLASS": "common.drf.AutoSchema",
    # Every API error answers {"errors": [{"field", "code", "message"}]}.
    "EXCEPTION_HANDLER": "common.drf.exception_handler",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
    ],
}

# Anonymous clients are throttled, every API endpoint per scope and every page
# (common/throttling.py); signed-in users are not. A client is its address:
# the one the last of NUM_PROXIES trusted proxies saw in X-Forwarded-For, or
# the socket's (0, the default: nothing in a header is trusted).
NUM_PROXIES = env.int("NUM_PROXIES", default=0)
if NUM_PROXIES < 0:
    raise ImproperlyConfigured("NUM_PROXIES must be 0 or more.")
REST_FRAMEWORK["NUM_PROXIES"] = NUM_PROXIES
REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"] = ["common.throttling.PublicAnonThrottle"]
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {
    "public_api": env.str("API_ANON_RATE", default="600/minute"),
    "export": env.str("EXPORT_ANON_RATE", default="30/hour"),
    "pages": env.str("PAGE_ANON_RATE", default="300/minute"),
}
AXES_IPWARE_PROXY_COUNT = NUM_PROXIES
AXES_IPWARE_META_PRECEDENCE_ORDER = (
    ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"] if NUM_PROXIES else ["REMOTE_ADDR"]
)
# Cached leaderboards expire after this even when no write signalled a change.
LEADERBOARD_CACHE_SECONDS = env.int("LEADERBOARD_CACHE_SECONDS", default=15 * 60)
# For this long after a write, a board that takes seconds is answered as it was
# while a judge worker recomputes it (leaderboard.caching); 0: readers compute.
# Without a broker readers always compute.
LEADERBOARD_STALE_SECONDS = env.int("LEADERBOARD_STALE_SECONDS", default=120)
# Releases: the site's public address, for the absolute links of a release's dataset
# card and Croissant metadata ("" leaves them relative to the site), and the licence
# of the released data (a Hugging Face licence id, and its URL for Croissant).
RELEASE_BASE_URL = env("RELEASE_BASE_URL", default="")
RELEASE_LICENSE = env("RELEASE_LICENSE", default="mit")
RELEASE_LICENSE_URL = env("RELEASE_LICENSE_URL", default="https://opensource.org/licenses/MIT")

SPECTACULAR_SETTINGS = {
    "TITLE": "MLR-Bench site API",
    "DESCRIPTION": "Tasks, submissions, judgments, reviews and leaderboards of MLR-Bench.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The docs page must work offline: Swagger UI comes from the sidecar package.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Two models name a choice field `kind`: each enum gets its own name.
    "ENUM_NAME_OVERRIDES": {
        "TaskKindEnum": "benchmark.models.TaskKind",
        "ArtifactKindEnum": "benchmark.models.ArtifactKind",
        "AgentRunStatusEnum": "agent_runs.models.RunStatus",
        "AgentRunStageStatusEnum": "agent_runs.models.StageStatus",
    },
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Deployment behind HTTPS (see .env.example; `manage.py check --deploy` is
# clean with the production values there). Off by default: a bare machine
# serves plain HTTP on localhost.
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=False)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=False)
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
# The proxy's header that says the request came over HTTPS, e.g.
# "HTTP_X_FORWARDED_PROTO=https"; only set it behind a proxy that always sets it.
_proxy_ssl_header = env.str("SECURE_PROXY_SSL_HEADER", default="")
SECURE_PROXY_SSL_HEADER = (
    tuple(_proxy_ssl_header.split("=", 1)) if "=" in _proxy_ssl_header else None
)
# The health check answers plain HTTP to the load balancer.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

# One Content-Security-Policy for every page (django-csp): scripts, styles,
# images and fonts from the site only; no inline script but one carrying the
# request's nonce (`{{ request.csp_nonce }}`). Pages that serve uploaded files
# set a stricter one of their own.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'", csp_constants.NONCE],
        "style-src": ["'self'"],
        "img-src": ["'self'"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # litellm logs every call at INFO: noise in the worker logs, and CPU on the judge queue.
    "loggers": {
        name: {"level": env.str("LITELLM_LOG_LEVEL", default="WARNING")}
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx")
    },
}

# Leases (common/leases.py): a worker holds the row it works on (an experiment
# run, an agent run's stage) and writes a heartbeat while it does; a row whose
# worker has been silent this long is taken to be lost and another worker takes
# it over. A judgment writes no heartbeat: it is given up for dead after the judge
# task's hard time limit (JUDGE_TASK_TIME_LIMIT below).
LEASE_STALE_SECONDS = env.int("LEASE_STALE_SECONDS", default=180)
# How often a running experiment run writes its heartbeat (with its cancel check).
EXPERIMENT_HEARTBEAT_SECONDS = env.float("EXPERIMENT_HEARTBEAT_SECONDS", default=15.0)

# MLR-Judge (judging app). A judge run stops retrying at the soft limit and is
# given up for dead (requeued by `reap_stuck`) after the hard one; the Redis
# visibility timeout above must outlast the hard limit.
JUDGE_TASK_SOFT_TIME_LIMIT = env.int("JUDGE_TASK_SOFT_TIME_LIMIT", default=10 * 60)
JUDGE_TASK_TIME_LIMIT = env.int("JUDGE_TASK_TIME_LIMIT", default=12 * 60)
# Transient errors (429, 5xx, timeouts, refused connections): tries per call,
# exponential backoff with jitter between them.
JUDGE_RETRY_ATTEMPTS = env.int("JUDGE_RETRY_ATTEMPTS", default=5)
JUDGE_RETRY_BASE_SECONDS = env.float("JUDGE_RETRY_BASE_SECONDS", default=2.0)
JUDGE_RETRY_MAX_SECONDS = env.float("JUDGE_RETRY_MAX_SECONDS", default=60.0)
# Answers that are not the rubric's JSON: how many times the judge is asked again.
JUDGE_MAX_REASKS = env.int("JUDGE_MAX_REASKS", default=2)
# Every active judge also runs the hallucination review of experiment, paper and
# end-to-end submissions (its own rubric per stage); off: scores only.
JUDGE_HALLUCINATION_REVIEWS = env.bool("JUDGE_HALLUCINATION_REVIEWS", default=True)
# What a judge reads is cut to these many characters, with a visible marker.
JUDGE_DOCUMENT_BUDGET_CHARS = env.int("JUDGE_DOCUMENT_BUDGET_CHARS", default=60_000)
JUDGE_CODE_BUDGET_CHARS = env.int("JUDGE_CODE_BUDGET_CHARS", default=60_000)
JUDGE_LOG_BUDGET_CHARS = env.int("JUDGE_LOG_BUDGET_CHARS", default=20_000)
JUDGE_REAP_INTERVAL_SECONDS = env.int("JUDGE_REAP_INTERVAL_SECONDS", default=5 * 60)
# The reaper also sends again judgments `queued` this long since they were
# queued or last sent (their message may be lost: a broker restart, a failed
# enqueue); at most this many per run. Sending twice is harmless (the claim).
JUDGE_RESEND_QUEUED_SECONDS = env.int("JUDGE_RESEND_QUEUED_SECONDS", default=15 * 60)
JUDGE_RESEND_BATCH = env.int("JUDGE_RESEND_BATCH", default=5000)
# The window a judge's requests_per_minute counts over (judging/ratelimit.py): a
# minute. Only perf/judge_throughput.py changes it, to scale time with its answers.
JUDGE_RATE_WINDOW_SECONDS = env.float("JUDGE_RATE_WINDOW_SECONDS", default=60.0)
# A call is counted when its turn is taken and reaches the provider a little
# later (litellm building the request, a busy core): the limiter keeps each call
# counted this share of the window longer, so that late calls never crowd one
# of the provider's windows past the limit (2%: 1.2 s of a minute).
JUDGE_RATE_GUARD = env.float("JUDGE_RATE_GUARD", default=0.02)
# Calls in flight per worker process (judging/callslots.py): with it set, a worker
# may run more threads than calls, the others preparing prompts and recording
# results. 0: the process's threads are its calls.
JUDGE_CALLS_PER_PROCESS = env.int("JUDGE_CALLS_PER_PROCESS", default=0)
if JUDGE_CALLS_PER_PROCESS < 0:
    raise ImproperlyConfigured("JUDGE_CALLS_PER_PROCESS must be 0 (no limit) or more.")
CELERY_TASK_ROUTES = {
    "judging.*": {"queue": JUDGE_QUEUE},
    # The experiment task kept the name it had in the benchmark app: messages
    # queued before the experiments app existed still find it.
    "benchmark.experiment_run": {"queue": GPU_QUEUE},
    # MLR-Agent: the LLM stages wait on the network, the coding loop runs the sandbox.
    "agent_runs.experiment_stage": {"queue": GPU_QUEUE},
    "agent_runs.*": {"queue": JUDGE_QUEUE},
    # Recomputing the boards after a write: a judge worker's few seconds.
    "leaderboard.*": {"queue": JUDGE_QUEUE},
}
# Celery's Django fixup closes the database connection around every task, whatever
# CONN_MAX_AGE says; with CONN_MAX_AGE set, let it reuse them (the judge tasks close
# obsolete or broken ones themselves, as Django does around a request).
CELERY_DB_REUSE_MAX = env.int(
    "CELERY_DB_REUSE_MAX", default=1000 if DATABASES["default"]["CONN_MAX_AGE"] else 0
)
CELERY_BEAT_SCHEDULE = {
    "judging-reap-stuck": {
        "task": "judging.reap_stuck",
        "schedule": JUDGE_REAP_INTERVAL_SECONDS,
        "options": {"queue": JUDGE_QUEUE},
    },
    "agent-runs-resume-stalled": {
        "task": "agent_runs.resume_stalled",
        "schedule": env.int("AGENT_RUN_REAP_INTERVAL_SECONDS", default=60),
        "options": {"queue": JUDGE_QUEUE},
    },
}
# MLR-Agent runs (agent_runs/): a stage whose worker has not written a heartbeat for
# this long is taken to be lost and the run resumes at that stage on another worker
# (the lease's time unless set apart).
AGENT_RUN_STALE_SECONDS = env.int("AGENT_RUN_STALE_SECONDS", default=LEASE_STALE_SECONDS)
AGENT_RUN_HEARTBEAT_SECONDS = env.float("AGENT_RUN_HEARTBEAT_SECONDS", default=10.0)
# Each LLM call's timeout, and a `run` command's wall time in the coding loop.
AGENT_RUN_CALL_TIMEOUT_SECONDS = env.float("AGENT_RUN_CALL_TIMEOUT_SECONDS", default=300.0)
AGENT_RUN_COMMAND_SECONDS = env.int("AGENT_RUN_COMMAND_SECONDS", default=600)
# Answers without a tool call the coding loop tolerates (telling the model to use one).
AGENT_RUN_MAX_NUDGES = env.int("AGENT_RUN_MAX_NUDGES", default=2)
# How often a running stage looks for a cancel (it then stops whatever it is doing).
AGENT_RUN_CANCEL_POLL_SECONDS = env.float("AGENT_RUN_CANCEL_POLL_SECONDS", default=2.0)
# The environment variables a run's `api_key_env` may name (comma-separated
# names or shell patterns, e.g. `OPENAI_API_KEY,ANTHROPIC_*`). Empty (the
# default): names ending in `_API_KEY`. Never a variable or setting the site
# itself reads (SECRET_KEY, DATABASE_URL, ...), whatever this says: a run's key
# is sent to the run's `api_base`, which its creator chooses.
AGENT_RUN_KEY_ENV_ALLOW = env.list("AGENT_RUN_KEY_ENV_ALLOW", default=[])

# Submission intake (benchmark/archives.py). Limits on an uploaded run,
# counted on the bytes actually read, never taken from headers.
INTAKE_MAX_ARCHIVE_BYTES = env.int("INTAKE_MAX_ARCHIVE_BYTES", default=512 * 1024 * 1024)
INTAKE_MAX_UNPACKED_BYTES = env.int("INTAKE_MAX_UNPACKED_BYTES", default=2 * 1024 * 1024 * 1024)
INTAKE_MAX_ENTRIES = env.int("INTAKE_MAX_ENTRIES", default=10_000)
INTAKE_MAX_COMPRESSION_RATIO = env.int("INTAKE_MAX_COMPRESSION_RATIO", default=200)
INTAKE_MAX_PATH_DEPTH = env.int("INTAKE_MAX_PATH_DEPTH", default=16)
INTAKE_MAX_NESTED_ARCHIVES = env.int("INTAKE_MAX_NESTED_ARCHIVES", default=0)
# Untrusted markdown is rendered once, at intake (benchmark/rendering.py): past
# this size, or past this time in the child process that renders large
# documents, it is kept as escaped plain text with a note.
MARKDOWN_RENDER_MAX_BYTES = env.int("MARKDOWN_RENDER_MAX_BYTES", default=2 * 1024 * 1024)
MARKDOWN_RENDER_TIMEOUT_SECONDS = env.float("MARKDOWN_RENDER_TIMEOUT_SECONDS", default=10.0)
# Coding-agent traces (claude_output.json, Codex and Gemini CLI logs, the MLR-Agent's
# trace) are read once at intake into steps (benchmark/traces.py) within these bounds;
# past one the steps are cut with a note.
TRACE_MAX_BYTES = env.int("TRACE_MAX_BYTES", default=32 * 1024 * 1024)
TRACE_PARSE_SECONDS = env.float("TRACE_PARSE_SECONDS", default=10.0)
TRACE_MAX_STEPS = env.int("TRACE_MAX_STEPS", default=2000)
TRACE_MAX_FIELD_CHARS = env.int("TRACE_MAX_FIELD_CHARS", default=20_000)
TRACE_MAX_TOTAL_CHARS = env.int("TRACE_MAX_TOTAL_CHARS", default=8_000_000)
# A PDF paper's text is extracted once at intake, in a child process under these limits.
PDF_MAX_BYTES = env.int("PDF_MAX_BYTES", default=50 * 1024 * 1024)
PDF_MAX_PAGES = env.int("PDF_MAX_PAGES", default=300)
PDF_TEXT_MAX_CHARS = env.int("PDF_TEXT_MAX_CHARS", default=2_000_000)
PDF_TEXT_SECONDS = env.float("PDF_TEXT_SECONDS", default=30.0)
PDF_TEXT_MEMORY_BYTES = env.int("PDF_TEXT_MEMORY_BYTES", default=1024 * 1024 * 1024)
# One upload's untrusted work together (issue 32): at most this many PDF papers and
# markdown documents, and this many seconds for all of their rendering, PDF text and
# trace reading (each also within its own limit above). Past the time, documents are
# kept as plain text, and a PDF not yet read refuses the upload, saying so. Below a
# web worker's timeout (gunicorn's 120 s), so an upload never takes the worker down.
INTAKE_MAX_PDFS = env.int("INTAKE_MAX_PDFS", default=5)
INTAKE_MAX_DOCUMENTS = env.int("INTAKE_MAX_DOCUMENTS", default=50)
INTAKE_WORK_SECONDS = env.float("INTAKE_WORK_SECONDS", default=60.0)
# Source files are highlighted once at intake (benchmark/highlight.py) up to this size,
# each within this time; past either, the file page shows escaped plain text.
SOURCE_HIGHLIGHT_MAX_BYTES = env.int("SOURCE_HIGHLIGHT_MAX_BYTES", default=256 * 1024)
SOURCE_HIGHLIGHT_FILE_SECONDS = env.float("SOURCE_HIGHLIGHT_FILE_SECONDS", default=2.0)
# Uploads stream to a temporary file (hashed on the way), never into memory.
FILE_UPLOAD_HANDLERS = ["benchmark.uploads.ArchiveUploadHandler"]
REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"].append(
    "benchmark.authentication.ApiTokenAuthentication"
)
# Experiment jobs (`gpu` queue): submitted code runs in a bubblewrap sandbox.
# Work folders and the GPU slot locks live under EXPERIMENT_WORK_ROOT, which every
# worker process of a host shares and the sandbox user must be able to enter.
EXPERIMENT_WORK_ROOT = env.path(
    "EXPERIMENT_WORK_ROOT",
    default="/tmp/mlrbench-experiments",  # noqa: S108 - per-run folders, made 0755 by us
)
# Where installed objective tasks keep their data and evaluation program
# (never under MEDIA_ROOT, which may be served: test labels are secret).
EXPERIMENT_DATA_ROOT = env.path("EXPERIMENT_DATA_ROOT", default=BASE_DIR / "var" / "objective")
# Objective tasks' Python environments (experiments/environments.py): one
# virtual environment per requirements hash, built with TASK_ENV_PYTHON.
TASK_ENV_ROOT = env.path("TASK_ENV_ROOT", default=BASE_DIR / "var" / "task-envs")
TASK_ENV_PYTHON = env.str("TASK_ENV_PYTHON", default="/usr/bin/python3")
EXPERIMENT_TIME_LIMIT_SECONDS = env.int("EXPERIMENT_TIME_LIMIT_SECONDS", default=3600)
EXPERIMENT_MAX_TIME_LIMIT_SECONDS = env.int("EXPERIMENT_MAX_TIME_LIMIT_SECONDS", default=6 * 3600)
EXPERIMENT_LOG_MAX_BYTES = env.int("EXPERIMENT_LOG_MAX_BYTES", default=10 * 1024 * 1024)
# How often a running run's log is written again to the store (its page follows it).
EXPERIMENT_LOG_PUBLISH_SECONDS = env.float("EXPERIMENT_LOG_PUBLISH_SECONDS", default=2.0)
EXPERIMENT_OUTPUT_MAX_BYTES = env.int("EXPERIMENT_OUTPUT_MAX_BYTES", default=50 * 1024 * 1024)
SANDBOX_MEMORY_BYTES = env.int("SANDBOX_MEMORY_BYTES", default=16 * 1024**3)
SANDBOX_PROCESSES = env.int("SANDBOX_PROCESSES", default=1024)
SANDBOX_DISK_BYTES = env.int("SANDBOX_DISK_BYTES", default=4 * 1024**3)
SANDBOX_CGROUPS = env.str("SANDBOX_CGROUPS", default="auto")  # auto | v2 | v1 | off
# Each concurrent job on a host runs as its own uid SANDBOX_UID_BASE + slot.
SANDBOX_UID_BASE = env.int("SANDBOX_UID_BASE", default=61000)
SANDBOX_MAX_JOBS = env.int("SANDBOX_MAX_JOBS", default=16)
# The locks that guard those uids: one folder for the whole host, whatever the
# work root, so that no two workers run (or sweep) one uid at once.
SANDBOX_UID_LOCK_DIR = env.path(
    "SANDBOX_UID_LOCK_DIR",
    default="/run/lock/mlrbench-sandbox" if os.path.isdir("/run/lock") else "/tmp/mlrbench-sandbox",  # noqa: S108
)
# Extra host folders the sandbox sees read-only (e.g. a virtualenv with torch),
# and names of worker variables passed through; nothing else is.
SANDBOX_RO_PATHS = env.list("SANDBOX_RO_PATHS", default=[])
SANDBOX_ENV_ALLOW = env.list("SANDBOX_ENV_ALLOW", default=[])
# GPUs of this host (unset: `nvidia-smi -L`), and the most any host has (unset:
# what the gpu workers announce in Redis). A job asking for more is refused.
GPU_COUNT = env.int("GPU_COUNT", default=None)
GPU_MAX_PER_HOST = env.int("GPU_MAX_PER_HOST", default=None)
# Queue a dev run (method code) or a reproduction run (run.sh) when an upload's
# intake finishes; only with a broker, and never for imported runs.
EXPERIMENT_AUTO_QUEUE = env.bool("EXPERIMENT_AUTO_QUEUE", default=True)
# Relative tolerance when a reproduction run's numbers are compared with the paper's.
REPRODUCTION_TOLERANCE = env.float("REPRODUCTION_TOLERANCE", default=0.01)

# Hooks that hide submissions from one user on the pages that name agents
# (benchmark/visibility.py): a reviewer does not see the papers they have not
# reviewed yet, anywhere on the site, until their own review is in.
SUBMISSION_VISIBILITY_HOOKS = ["reviews.blind.submissions_pending_review_by"]
# Left out of every page for everyone (anonymous visitors too) but organisers: papers
# in an open blind review round (benchmark/visibility.py, README "Blind review").
SUBMISSION_OMISSION_HOOKS = ["reviews.blind.submissions_under_open_review"]

# Panels other apps add to benchmark's pages (benchmark/page_panels.py).
SUBMISSION_PAGE_PANELS = [
    "experiments.panels.experiment_runs_panel",
    "judging.panels.judgments_panel",
]
TASK_PAGE_PANELS = ["experiments.panels.objective_results_panel"]
SUBMISSION_NOTICES = ["judging.selectors.judging_notices"]
SUBMISSION_SUMMARY = [
    "judging.panels.judging_summary",
    "reviews.panels.human_review_summary",
]
# Checks other apps make of an upload before it becomes a submission (see
# benchmark/intake.py): an MLRC-Bench method archive's layout and read-only files.
SUBMISSION_INTAKE_CHECKS = ["experiments.intake.method_archive_problem"]
# Last: every variable read above (see `_RecordingEnv`).
SITE_ENV_NAMES = frozenset(env.names)
