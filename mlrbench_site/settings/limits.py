"""The domain's limits, budgets and times, app by app: leases, submission intake,
experiments and the sandbox, MLR-Judge, MLR-Agent runs, leaderboards and
releases. Each is read from the environment with a default that runs on a bare
machine; docs/configuration.md lists every one."""

import os

from django.core.exceptions import ImproperlyConfigured

from .base import BASE_DIR, env

# Leases (common/leases.py): a worker holds the row it works on (an experiment
# run, an agent run's stage) and writes a heartbeat while it does; a row whose
# worker has been silent this long is taken to be lost and another worker takes
# it over. A judgment's heartbeat is its worker process's (JUDGE_HEARTBEAT_SECONDS,
# MLR-Judge below).
LEASE_STALE_SECONDS = env.int("LEASE_STALE_SECONDS", default=180)
# How often a running experiment run writes its heartbeat (with its cancel check).
EXPERIMENT_HEARTBEAT_SECONDS = env.float("EXPERIMENT_HEARTBEAT_SECONDS", default=15.0)

# Submission intake (submissions/archives.py). Limits on an uploaded run,
# counted on the bytes actually read, never taken from headers.
INTAKE_MAX_ARCHIVE_BYTES = env.int("INTAKE_MAX_ARCHIVE_BYTES", default=512 * 1024 * 1024)
INTAKE_MAX_UNPACKED_BYTES = env.int("INTAKE_MAX_UNPACKED_BYTES", default=2 * 1024 * 1024 * 1024)
INTAKE_MAX_ENTRIES = env.int("INTAKE_MAX_ENTRIES", default=10_000)
INTAKE_MAX_COMPRESSION_RATIO = env.int("INTAKE_MAX_COMPRESSION_RATIO", default=200)
INTAKE_MAX_PATH_DEPTH = env.int("INTAKE_MAX_PATH_DEPTH", default=16)
INTAKE_MAX_NESTED_ARCHIVES = env.int("INTAKE_MAX_NESTED_ARCHIVES", default=0)
# Untrusted markdown is rendered once, at intake (common/rendering.py): past
# this size, or past this time in the child process that renders large
# documents, it is kept as escaped plain text with a note.
MARKDOWN_RENDER_MAX_BYTES = env.int("MARKDOWN_RENDER_MAX_BYTES", default=2 * 1024 * 1024)
MARKDOWN_RENDER_TIMEOUT_SECONDS = env.float("MARKDOWN_RENDER_TIMEOUT_SECONDS", default=10.0)
# Coding-agent traces (claude_output.json, Codex and Gemini CLI logs, the MLR-Agent's
# trace) are read once at intake into steps (submissions/traces.py) within these bounds;
# past one the steps are cut with a note.
TRACE_MAX_BYTES = env.int("TRACE_MAX_BYTES", default=32 * 1024 * 1024)
TRACE_PARSE_SECONDS = env.float("TRACE_PARSE_SECONDS", default=10.0)
TRACE_MAX_STEPS = env.int("TRACE_MAX_STEPS", default=2000)
TRACE_MAX_FIELD_CHARS = env.int("TRACE_MAX_FIELD_CHARS", default=20_000)
TRACE_MAX_TOTAL_CHARS = env.int("TRACE_MAX_TOTAL_CHARS", default=8_000_000)
# A trace is parsed in a child process with at most this much address space (issue 40:
# 31.5 MB of `{}` grew a web worker to 896 MB); past it the trace is not read, with a note.
TRACE_PARSE_MEMORY_BYTES = env.int("TRACE_PARSE_MEMORY_BYTES", default=768 * 1024 * 1024)
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
# Uploads of one account processed at once (the form and the API); one more is
# answered 429 with Retry-After (issue 40: one account's parallel uploads held
# every web worker).
INTAKE_MAX_CONCURRENT_UPLOADS = env.int("INTAKE_MAX_CONCURRENT_UPLOADS", default=2)
# Source files are highlighted once at intake (submissions/highlight.py) up to this size,
# each within this time; past either, the file page shows escaped plain text.
SOURCE_HIGHLIGHT_MAX_BYTES = env.int("SOURCE_HIGHLIGHT_MAX_BYTES", default=256 * 1024)
SOURCE_HIGHLIGHT_FILE_SECONDS = env.float("SOURCE_HIGHLIGHT_FILE_SECONDS", default=2.0)
# What highlighting may store (issue 40): files of more lines are shown as escaped text
# without line numbers; a file's HTML at most this many bytes; all of one upload's
# highlighting within this many seconds (of INTAKE_WORK_SECONDS).
SOURCE_HIGHLIGHT_MAX_LINES = env.int("SOURCE_HIGHLIGHT_MAX_LINES", default=5_000)
SOURCE_HIGHLIGHT_MAX_HTML_BYTES = env.int("SOURCE_HIGHLIGHT_MAX_HTML_BYTES", default=1024 * 1024)
SOURCE_HIGHLIGHT_UPLOAD_SECONDS = env.float("SOURCE_HIGHLIGHT_UPLOAD_SECONDS", default=10.0)
# All the HTML derived from one upload (rendered documents and highlighted sources) is
# stored within this many bytes; sources past it are shown as escaped text.
INTAKE_MAX_DERIVED_BYTES = env.int("INTAKE_MAX_DERIVED_BYTES", default=16 * 1024 * 1024)

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
# The package index pip builds them from (blank: pip's own configuration), and
# more indexes, space-separated: a CPU-only host points torch at its CPU wheels
# (https://download.pytorch.org/whl/cpu) instead of several GB of CUDA ones.
TASK_ENV_PIP_INDEX_URL = env.str("TASK_ENV_PIP_INDEX_URL", default="")
TASK_ENV_PIP_EXTRA_INDEX_URL = env.str("TASK_ENV_PIP_EXTRA_INDEX_URL", default="")
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

# Every model call (the LLM gateway, common/llm.py `RetryPolicy`: judges and agent
# runs alike). Transient errors (429, 5xx, timeouts, refused connections): tries
# per call in all, and the backoff between them: the base doubling after each
# failed try, at most the cap, with jitter; a server's Retry-After is waited, up
# to the cap. A judge also stops retrying at its run's soft time limit. The
# JUDGE_RETRY_* variables are the former names of these, still read.
LLM_RETRY_ATTEMPTS = env.int(
    "LLM_RETRY_ATTEMPTS", default=env.int("JUDGE_RETRY_ATTEMPTS", default=5)
)
LLM_RETRY_BASE_SECONDS = env.float(
    "LLM_RETRY_BASE_SECONDS", default=env.float("JUDGE_RETRY_BASE_SECONDS", default=2.0)
)
LLM_RETRY_MAX_SECONDS = env.float(
    "LLM_RETRY_MAX_SECONDS", default=env.float("JUDGE_RETRY_MAX_SECONDS", default=60.0)
)
if LLM_RETRY_ATTEMPTS < 1:
    raise ImproperlyConfigured("LLM_RETRY_ATTEMPTS must be 1 (no retry) or more.")
if LLM_RETRY_BASE_SECONDS < 0 or LLM_RETRY_MAX_SECONDS < 0:
    raise ImproperlyConfigured(
        "LLM_RETRY_BASE_SECONDS and LLM_RETRY_MAX_SECONDS must not be negative."
    )

# Where a model call may send a key and which servers it may call (common/llm_policy.py),
# for judges and agent runs alike, checked when one is saved and again before each call.
# LLM_KEY_ENV_ALLOW: the variables a key may be read from (comma-separated names or
# shell patterns; empty, the default: names ending in `_API_KEY`); never a variable or
# setting the site reads itself (SECRET_KEY, DATABASE_URL, AWS_*, ...), whatever it says.
# AGENT_RUN_KEY_ENV_ALLOW is its former name, still read (the two lists add up).
LLM_KEY_ENV_ALLOW = env.list("LLM_KEY_ENV_ALLOW", default=[])
# LLM_KEY_HOSTS: the servers (an `api_base`'s host) a key variable may also be sent to,
# besides its provider's own (OPENAI_API_KEY: api.openai.com, ...):
# `VAR=host,host;VAR2=host`, VAR a name or a shell pattern, a host `.example.com` for
# every host under it. A key variable that is no provider's goes to no `api_base` it
# does not list.
LLM_KEY_HOSTS: dict[str, list[str]] = {}
for _entry in env.str("LLM_KEY_HOSTS", default="").split(";"):
    if not _entry.strip():
        continue
    _name, _sep, _hosts = _entry.partition("=")
    if not _sep or not _name.strip() or not _hosts.strip():
        raise ImproperlyConfigured(
            f"LLM_KEY_HOSTS: {_entry.strip()!r} is not VAR=host[,host] (entries apart by ';')."
        )
    LLM_KEY_HOSTS.setdefault(_name.strip(), []).extend(
        host.strip().lower() for host in _hosts.split(",") if host.strip()
    )
# LLM_API_BASE_ALLOWED_HOSTS: servers an `api_base` may name although the address policy
# refuses them (a link-local or cloud metadata address, a host and port of the site's
# own services: DATABASE_URL, REDIS_URL, CELERY_BROKER_URL, AWS_S3_ENDPOINT_URL): host
# names, addresses, networks (10.0.0.0/8) or host:port, comma-separated.
LLM_API_BASE_ALLOWED_HOSTS = env.list("LLM_API_BASE_ALLOWED_HOSTS", default=[])

# MLR-Judge (judging app). A judge run stops retrying at the soft limit; the
# prefork pool kills it at the hard one. The Redis visibility timeout (celery.py)
# must outlast the hard limit.
JUDGE_TASK_SOFT_TIME_LIMIT = env.int("JUDGE_TASK_SOFT_TIME_LIMIT", default=10 * 60)
JUDGE_TASK_TIME_LIMIT = env.int("JUDGE_TASK_TIME_LIMIT", default=12 * 60)
# Answers that are not the rubric's JSON: how many times the judge is asked again.
JUDGE_MAX_REASKS = env.int("JUDGE_MAX_REASKS", default=2)
# Every active judge also runs the hallucination review of experiment, paper and
# end-to-end submissions (its own rubric per stage); off: scores only.
JUDGE_HALLUCINATION_REVIEWS = env.bool("JUDGE_HALLUCINATION_REVIEWS", default=True)
# What a judge reads is cut to these many characters, with a visible marker.
JUDGE_DOCUMENT_BUDGET_CHARS = env.int("JUDGE_DOCUMENT_BUDGET_CHARS", default=60_000)
JUDGE_CODE_BUDGET_CHARS = env.int("JUDGE_CODE_BUDGET_CHARS", default=60_000)
JUDGE_LOG_BUDGET_CHARS = env.int("JUDGE_LOG_BUDGET_CHARS", default=20_000)
# A running judgment's worker process writes its heartbeat this often (judging/
# heartbeat.py), until the run's soft limit; a judgment whose heartbeat is older
# than JUDGE_LEASE_STALE_SECONDS has lost its worker (killed, out of memory) and
# the reaper, every JUDGE_REAP_INTERVAL_SECONDS, queues it again.
JUDGE_HEARTBEAT_SECONDS = env.float("JUDGE_HEARTBEAT_SECONDS", default=30.0)
JUDGE_LEASE_STALE_SECONDS = env.int("JUDGE_LEASE_STALE_SECONDS", default=LEASE_STALE_SECONDS)
JUDGE_REAP_INTERVAL_SECONDS = env.int("JUDGE_REAP_INTERVAL_SECONDS", default=60)
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
# The former name of LLM_KEY_ENV_ALLOW (above), when it was for agent runs only:
# still read, its names and patterns added to that list's.
AGENT_RUN_KEY_ENV_ALLOW = env.list("AGENT_RUN_KEY_ENV_ALLOW", default=[])

# Leaderboards (leaderboard/caching.py): cached boards expire after this even
# when no write signalled a change.
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
