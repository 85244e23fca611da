"""The experiment tables moved to the `experiments` app: only Django's
state changes here; the tables, their rows and constraints stay as they are
(experiments/migrations/0001_initial.py takes them over under the same names)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("benchmark", "0006_agent_names_with_dots"),
        ("experiments", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='experimentrun',
                    name='requested_by',
                ),
                migrations.RemoveField(
                    model_name='experimentrun',
                    name='rerun_of',
                ),
                migrations.RemoveField(
                    model_name='experimentrun',
                    name='submission',
                ),
                migrations.RemoveField(
                    model_name='objectiveresult',
                    name='dev_run',
                ),
                migrations.RemoveField(
                    model_name='objectiveresult',
                    name='test_run',
                ),
                migrations.RemoveField(
                    model_name='objectiveresult',
                    name='agent',
                ),
                migrations.RemoveField(
                    model_name='objectiveresult',
                    name='objective',
                ),
                migrations.RemoveField(
                    model_name='objectivetask',
                    name='task',
                ),
                migrations.DeleteModel(
                    name='ReproductionCheck',
                ),
                migrations.DeleteModel(
                    name='ExperimentRun',
                ),
                migrations.DeleteModel(
                    name='ObjectiveResult',
                ),
                migrations.DeleteModel(
                    name='ObjectiveTask',
                ),
            ],
            database_operations=[],
        ),
    ]
