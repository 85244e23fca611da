"""Settings for the MLR-Bench site, read from the environment (django-environ).

Every value has a default that runs on a bare machine: SQLite, a local-memory
cache and Celery in eager mode. PostgreSQL and Redis are one variable away.
docs/configuration.md lists every variable (a test holds it).

`DJANGO_SETTINGS_MODULE=mlrbench_site.settings` is this package; its modules,
in the order they are read (each may use the ones before it, never after):

- `base`: the environment reader (`.env` too), Django, the database, the cache,
  the REST framework, security, logging;
- `storage`: static files, media, artifacts (filesystem or S3), MLR-Bench data;
- `limits`: the domain's limits, budgets and times, app by app;
- `celery`: the broker, queues, routes, time limits, periodic tasks;
- `wiring`: how the apps reach the ones above them (dotted-path lists, and a
  table of the registries and signals filled in `ready()`).

`mlrbench_site.settings.test` is the test suite's: these, and what only a
test run changes (pytest's `DJANGO_SETTINGS_MODULE`).
"""

# In the order above, not the alphabet's: later modules build on earlier values.
# isort: off
from .base import *  # noqa: F403
from .base import env
from .storage import *  # noqa: F403
from .storage import _DEFAULT_STORAGE  # noqa: F401 - upper case, so a setting too
from .limits import *  # noqa: F403
from .celery import *  # noqa: F403
from .wiring import *  # noqa: F403

# isort: on

# Last: every variable read above (see `base._RecordingEnv`).
SITE_ENV_NAMES = frozenset(env.names)
