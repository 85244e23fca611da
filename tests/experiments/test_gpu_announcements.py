"""A GPU host's announcement reaches the site through Redis (REDIS_URL)
whichever broker carries the messages: with RabbitMQ as the broker the web
host still learns how many GPUs the largest host has."""

import redis

from experiments.slots import ANNOUNCE_KEY, gpu_capacity, gpu_host_announce, host_name


def test_with_rabbitmq_as_the_broker_gpu_hosts_still_announce_themselves(settings):
    settings.CELERY_BROKER_URL = "amqp://guest:guest@127.0.0.1:5672//"
    settings.GPU_COUNT = 3
    settings.GPU_MAX_PER_HOST = None
    client = redis.Redis.from_url(settings.REDIS_URL)
    client.delete(ANNOUNCE_KEY)
    try:
        assert gpu_host_announce() == 3
        assert client.hget(ANNOUNCE_KEY, host_name()) is not None
        assert gpu_capacity() == 3
    finally:
        client.delete(ANNOUNCE_KEY)
