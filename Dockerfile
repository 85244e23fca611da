FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 LITELLM_LOCAL_MODEL_COST_MAP=True
WORKDIR /app

# bubblewrap isolates experiment runs on the GPU workers.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap curl \
    && rm -rf /var/lib/apt/lists/*

COPY pyproject.toml README.md ./
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
RUN pip install --no-cache-dir .

COPY . .
RUN DEBUG=0 SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput

RUN useradd --create-home --uid 1000 mlrbench && mkdir -p /app/media && chown mlrbench /app/media
USER mlrbench
EXPOSE 8000
# Behind a buffering proxy (deploy/nginx.conf): sync workers must never face slow
# clients. A worker is replaced after 500 requests (jittered), giving back what
# an upload grew it by.
CMD ["gunicorn", "mlrbench_site.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "120", "--max-requests", "500", "--max-requests-jitter", "50"]
