"""Celery: the broker, the two queues, which tasks go to which, time limits,
redelivery and the periodic tasks. `mlrbench_site/celery.py` reads every
`CELERY_*` name here (`config_from_object(..., namespace="CELERY")`)."""

from kombu import Exchange, Queue

from .base import DATABASES, REDIS_URL, env
from .limits import JUDGE_REAP_INTERVAL_SECONDS

# Redis is the broker unless CELERY_BROKER_URL names another (RabbitMQ). Unset
# means no broker: tasks run eagerly.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL)

# Celery: the row in the database is the truth, so tasks are acknowledged
# late and claim their row; a lost worker's message is redelivered (Redis: after
# the visibility timeout, which must outlast the hard time limit).
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
# Without a broker, the threads of the web process that run what a worker would
# (judging, agent runs) after the response (common.tasks.run_soon); 0: inside
# the request, as Celery's eager mode does. Unused with a broker.
BACKGROUND_THREADS = env.int("BACKGROUND_THREADS", default=0 if CELERY_BROKER_URL else 2)
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
# Every task is acknowledged late, and redelivered when its worker is lost:
# `acks_late` and `reject_on_worker_lost` of their one base, common.tasks.WorkerTask.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
if BROKER_IS_RABBITMQ:
    # A publish returns once RabbitMQ has the message (py-amqp's confirms). An
    # unacknowledged delivery is redelivered when its worker's connection
    # closes; RabbitMQ's consumer_timeout must outlast the longest task (docs/configuration.md).
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {"confirm_publish": True}
else:
    # Redis redelivers an unacknowledged message after the visibility timeout
    # (which must outlast the judge task's hard limit, JUDGE_TASK_TIME_LIMIT too).
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env.int(
            "CELERY_VISIBILITY_TIMEOUT", default=CELERY_TASK_TIME_LIMIT * 3
        ),
    }
# kombu's Redis transport with a channel that can still restore and acknowledge
# its messages after a broker restart closed its connection (common/broker.py):
# the stock one raised AttributeError there, and the worker exited.
CELERY_BROKER_TRANSPORT = (
    "common.broker:RedisTransport"
    if CELERY_BROKER_URL.startswith(("redis://", "rediss://"))
    else None
)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"

# Which app's tasks go to which queue, by the task's name (wiring.py's table
# lists the other ways the apps reach one another).
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
