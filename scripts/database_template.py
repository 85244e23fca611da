"""A migrated PostgreSQL database to copy test and perf databases from.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mlrbench \\
        .venv/bin/python scripts/database_template.py create NAME   # or: drop NAME

`create` (re)creates NAME on DATABASE_URL's server and runs the migrations in
it; with TEST_DATABASE_TEMPLATE=NAME in the environment, the test database
(mlrbench_site/settings/base.py) and the perf scripts' databases are copies of it (CREATE
DATABASE ... TEMPLATE, a second), not migrated again (a minute on a busy
two-core machine). CI (.ci/run) makes one per run and drops it at the end.
"""

import os
import subprocess
import sys
import urllib.parse
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] not in {"create", "drop"}:
        sys.exit(__doc__)
    action, name = sys.argv[1:]
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        sys.exit("set DATABASE_URL to the PostgreSQL server (any database on it)")
    parts = urllib.parse.urlsplit(url)
    admin = parts._replace(scheme="postgresql", path="/postgres").geturl()
    quoted = '"' + name.replace('"', '""') + '"'
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")
        if action == "create":
            conn.execute(f"CREATE DATABASE {quoted}")
    if action == "create":
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=ROOT,
            env={
                **os.environ,
                "DATABASE_URL": parts._replace(path=f"/{name}").geturl(),
                "SECRET_KEY": os.environ.get("SECRET_KEY") or "template-only-secret-key",
            },
            check=True,
        )


if __name__ == "__main__":
    main()
