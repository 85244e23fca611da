# Two stages (docs/build.md): the builder installs exactly the set uv.lock
# records (no dev extra) and the site into /opt/venv; the runtime copies that
# environment and the sources .dockerignore lets through (never .env, .env.local,
# db.sqlite3, .venv, media/ or .git), and runs as an unprivileged user.

# uv's version: the one uv.lock records (tests/site/test_packaging.py checks it).
ARG UV_VERSION=0.13.9

FROM python:3.12-slim AS builder
ARG UV_VERSION
RUN pip install --no-cache-dir "uv==${UV_VERSION}"
# Bytecode compiled once here; files copied out of uv's cache (a BuildKit cache
# mount, kept between builds, never in the image); the image's own Python.
ENV UV_PROJECT_ENVIRONMENT=/opt/venv UV_COMPILE_BYTECODE=1 UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never
WORKDIR /app

# The dependencies alone first: this layer is rebuilt only when the lock changes.
COPY pyproject.toml uv.lock README.md ./
RUN --mount=type=cache,target=/root/.cache/uv uv sync --locked --no-install-project

# Then the site's packages (the same list as pyproject.toml's packages.find),
# installed as a wheel into the environment.
COPY mlrbench_site ./mlrbench_site
COPY common ./common
COPY benchmark ./benchmark
COPY submissions ./submissions
COPY experiments ./experiments
COPY judging ./judging
COPY agent_runs ./agent_runs
COPY reviews ./reviews
COPY leaderboard ./leaderboard
COPY sandbox ./sandbox
RUN --mount=type=cache,target=/root/.cache/uv uv sync --locked --no-editable


FROM python:3.12-slim AS runtime

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 LITELLM_LOCAL_MODEL_COST_MAP=True \
    PATH=/opt/venv/bin:$PATH
WORKDIR /app

# bubblewrap isolates experiment runs on the GPU workers; curl answers the health checks.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 1000 mlrbench

COPY --from=builder /opt/venv /opt/venv
# manage.py, templates/, static/ and the rest: what .dockerignore lets through.
COPY . .
RUN DEBUG=0 SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput \
    && mkdir -p /app/media /app/var \
    && chown mlrbench /app/media /app/var

USER mlrbench
EXPOSE 8000
# The same entry points docker-compose.yml's services run (gunicorn, celery,
# python manage.py), from /opt/venv/bin on PATH. Behind a buffering proxy
# (deploy/nginx.conf): sync workers must never face slow clients. A worker is
# replaced after 500 requests (jittered), giving back what an upload grew it by.
CMD ["gunicorn", "mlrbench_site.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "120", "--max-requests", "500", "--max-requests-jitter", "50"]
