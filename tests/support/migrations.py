"""Moving a database between migration states, for the tests of moved models."""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def latest():
    """Every app's last migration."""
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def apps_at(targets):
    """The historical models at `targets`."""
    return MigrationExecutor(connection).loader.project_state(targets).apps
