"""The test suite's settings (pytest's `DJANGO_SETTINGS_MODULE`, pyproject.toml):
the site's own (`mlrbench_site.settings`, read from the environment as always;
`scripts/test.sh` points it at PostgreSQL and Redis), with only what a test run
needs changed. Every process a test starts (a worker, a command) inherits
`DJANGO_SETTINGS_MODULE` from pytest, and so these settings; a test that means
to check the production settings names `mlrbench_site.settings` itself.

Per-test settings (a test's own `settings` fixture, or tests/conftest.py's
autouse fixtures, such as the boards computed by readers) stay with the tests:
only the test process has them, never the workers a test starts.
"""

from mlrbench_site.settings import *  # noqa: F403
from mlrbench_site.settings import _DEFAULT_STORAGE  # noqa: F401 - upper case, so a setting too

# Test accounts need no slow password hashing.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# The suite's judges and agent runs call the loopback fake model server
# (tests/support/fake_llm.py) with test key variables (TEST_JUDGE_KEY, ...): those
# names are allowed, and any allowed key may go to loopback. The tests of the key
# policy itself (tests/common/test_llm_policy.py) set the production defaults.
LLM_KEY_ENV_ALLOW = [*(LLM_KEY_ENV_ALLOW or ["*_API_KEY"]), "TEST_*_KEY"]  # noqa: F405
LLM_KEY_HOSTS = {**LLM_KEY_HOSTS, "*": ["127.0.0.1", "localhost", "::1"]}  # noqa: F405
