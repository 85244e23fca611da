"""Django itself: the environment reader, apps, middleware, templates, database,
cache, REST framework, security, logging. Read first: every later module may
use `env`, `BASE_DIR`, `DEBUG` and the values here."""

import os
from pathlib import Path
from typing import Any

import environ
from csp import constants as csp_constants
from django.conf import global_settings
from django.core.exceptions import ImproperlyConfigured

# litellm downloads its model price table at import unless told otherwise; the
# site has no internet in production sandboxes, and prices must not change
# under a running benchmark, so the bundled table is used everywhere.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

BASE_DIR = Path(__file__).resolve().parent.parent.parent


class _RecordingEnv(environ.Env):
    """Remembers every variable the settings read (`SITE_ENV_NAMES`): no agent
    run may name one of them as its API key variable (`AGENT_RUN_KEY_ENV_ALLOW`)."""

    names: set[str] = set()

    def get_value(self, var: str, *args: Any, **kwargs: Any) -> Any:
        self.names.add(var)
        return super().get_value(var, *args, **kwargs)


env = _RecordingEnv()


def env_file_path(base_dir: Path, named: str | None) -> Path:
    """The one settings file read: `named` (MLRBENCH_ENV_FILE) when set, else the quick
    start's own `.env.local` when it exists (scripts/quickstart.sh writes it:
    DEBUG on, a generated SECRET_KEY, SQLite), else `.env`, a deployment's
    (docker-compose's env_file, made from .env.example), which the quick start
    never writes. Git and docker ignore both; variables already in the
    environment win over the file (docs/build.md)."""
    if named:
        return Path(named)
    local = base_dir / ".env.local"
    return local if local.is_file() else base_dir / ".env"


ENV_FILE = env_file_path(BASE_DIR, os.environ.get("MLRBENCH_ENV_FILE"))
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

# The site's own apps, in the order of their arrows (docs/architecture.md).
# pyproject.toml's packages and the Dockerfile name the same list, with the
# three packages that are not apps (mlrbench_site, common, sandbox); a test checks it.
PROJECT_APPS = [
    "benchmark",
    "submissions",
    "experiments",
    "judging",
    "agent_runs",
    "reviews",
    "leaderboard",
]

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
# Not its "AXES: BEGIN version..." banner on every command's output.
AXES_VERBOSE = False

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
# (RabbitMQ), the Celery broker (celery.py). Unset means no broker: tasks run
# eagerly and the cache is local.
REDIS_URL = env.str("REDIS_URL", default="")

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

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Uploads stream to a temporary file (hashed on the way), never into memory.
FILE_UPLOAD_HANDLERS = ["submissions.uploads.ArchiveUploadHandler"]

# Anonymous clients are throttled, every API endpoint per scope and every page
# (common/throttling.py: the `limits` library over REDIS_URL); signed-in users
# are not. A client is its address: the one the last of NUM_PROXIES trusted
# proxies saw in X-Forwarded-For, or the socket's (0, the default: nothing in a
# header is trusted).
NUM_PROXIES = env.int("NUM_PROXIES", default=0)
if NUM_PROXIES < 0:
    raise ImproperlyConfigured("NUM_PROXIES must be 0 or more.")

REST_FRAMEWORK: dict[str, Any] = {
    "DEFAULT_SCHEMA_CLASS": "common.drf.AutoSchema",
    # Every API error answers {"errors": [{"field", "code", "message"}]}.
    "EXCEPTION_HANDLER": "common.drf.exception_handler",
    # JSON nested past a depth is answered 400, not a RecursionError's 500.
    "DEFAULT_PARSER_CLASSES": [
        "common.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "benchmark.authentication.ApiTokenAuthentication",
    ],
    "NUM_PROXIES": NUM_PROXIES,
    "DEFAULT_THROTTLE_CLASSES": ["common.throttling.PublicAnonThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "public_api": env.str("API_ANON_RATE", default="600/minute"),
        "export": env.str("EXPORT_ANON_RATE", default="30/hour"),
        # A release's stored files (JSON, export.zip, Parquet, card, croissant.json):
        # one load with pandas, `datasets` or mlcroissant is tens of requests (HEAD and
        # range requests per file), and a researcher loads one many times an hour.
        "release_files": env.str("RELEASE_FILES_ANON_RATE", default="3000/hour"),
        "pages": env.str("PAGE_ANON_RATE", default="300/minute"),
    },
}
AXES_IPWARE_PROXY_COUNT = NUM_PROXIES
AXES_IPWARE_META_PRECEDENCE_ORDER = (
    ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"] if NUM_PROXIES else ["REMOTE_ADDR"]
)

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
        "ArtifactKindEnum": "submissions.models.ArtifactKind",
        "AgentRunStatusEnum": "agent_runs.models.RunStatus",
        "AgentRunStageStatusEnum": "agent_runs.models.StageStatus",
        "StageEnum": "submissions.models.Stage",
        "AgentRunModeEnum": "agent_runs.models.RunMode",
        "AgentRunStepwiseStageEnum": "agent_runs.models.STEPWISE_STAGES",
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
