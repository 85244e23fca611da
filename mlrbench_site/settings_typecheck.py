"""Settings for mypy's Django plugin, which imports the settings to learn the
models and apps: the site's own settings with a throwaway key, so that
`mypy .` needs no environment. Never used to serve anything."""

import os

os.environ.setdefault("SECRET_KEY", "type-checking-only-never-served")

from .settings import *  # noqa: E402, F403
