"""Where files live: static files, media, artifacts (the local filesystem or an
S3-compatible bucket, django-storages' own setting names) and the MLR-Bench
data the importer reads."""

from typing import Any

from django.core.exceptions import ImproperlyConfigured

from .base import BASE_DIR, DEBUG, env

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
# Upper case after its underscore, so Django has always taken it for a setting
# too: `__init__` keeps it (no star import passes a leading underscore).
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
