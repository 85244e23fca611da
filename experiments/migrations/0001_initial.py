"""The experiment tables, taken over from the benchmark app where they were
created (benchmark/migrations/0005_experiments.py): state only, the tables keep
their names (`db_table`), rows, indexes and constraints."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('benchmark', '0006_agent_names_with_dots'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ExperimentRun',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('phase', models.CharField(choices=[('dev', 'Dev (objective task, dev data)'), ('test', 'Test (objective task, hidden test data)'), ('repro', 'Reproduction')], max_length=8)),
                        ('command', models.TextField()),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('timed_out', 'Timed out'), ('cancelled', 'Cancelled')], default='queued', max_length=16)),
                        ('gpu_count', models.PositiveSmallIntegerField(default=0, help_text='GPUs the run asks for.')),
                        ('time_limit_seconds', models.PositiveIntegerField()),
                        ('exit_code', models.IntegerField(blank=True, null=True)),
                        ('limit_hit', models.CharField(blank=True, choices=[('', 'None'), ('wall_time', 'Wall time'), ('memory', 'Memory'), ('processes', 'Processes'), ('disk', 'Bytes written')], default='', max_length=16)),
                        ('reason', models.TextField(blank=True, help_text='Why the run was blocked, killed, cancelled or could not start.')),
                        ('log', models.FileField(blank=True, max_length=300, upload_to='')),
                        ('outputs', models.JSONField(blank=True, default=list)),
                        ('metrics', models.JSONField(blank=True, default=dict)),
                        ('score', models.FloatField(blank=True, null=True)),
                        ('wall_seconds', models.FloatField(blank=True, null=True)),
                        ('peak_memory_bytes', models.PositiveBigIntegerField(blank=True, null=True)),
                        ('gpus', models.JSONField(blank=True, default=list, help_text='GPU indexes the run was given.')),
                        ('worker_host', models.CharField(blank=True, max_length=200)),
                        ('cancel_requested', models.BooleanField(default=False)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('requested_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('rerun_of', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='reruns', to='experiments.experimentrun')),
                        ('submission', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='experiment_runs', to='benchmark.submission')),
                    ],
                    options={
                        'db_table': 'benchmark_experimentrun',
                        'ordering': ['-created_at', '-id'],
                    },
                ),
                migrations.CreateModel(
                    name='ObjectiveTask',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('metric', models.CharField(max_length=100)),
                        ('higher_is_better', models.BooleanField()),
                        ('baseline_score', models.FloatField()),
                        ('human_score', models.FloatField(help_text='The top human score, 100% relative improvement.')),
                        ('method_command', models.CharField(default='sh run.sh', help_text='How the method code is run, in /work.', max_length=500)),
                        ('eval_command', models.TextField(help_text='Run in a second sandbox; writes metrics.json.')),
                        ('eval_dir', models.CharField(blank=True, help_text='Folder of the evaluation program, at /task.', max_length=500)),
                        ('dev_data_dir', models.CharField(max_length=500)),
                        ('test_data_dir', models.CharField(max_length=500)),
                        ('time_limit_seconds', models.PositiveIntegerField(default=600)),
                        ('gpu_count', models.PositiveSmallIntegerField(default=0)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('task', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='objective', to='benchmark.task')),
                    ],
                    options={
                        'db_table': 'benchmark_objectivetask',
                        'ordering': ['task__slug'],
                    },
                ),
                migrations.CreateModel(
                    name='ObjectiveResult',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('test_score', models.FloatField(blank=True, null=True)),
                        ('relative_improvement', models.FloatField(blank=True, null=True)),
                        ('runtime_seconds', models.FloatField(blank=True, null=True)),
                        ('lloc', models.PositiveIntegerField(help_text='Logical lines of code of the method.')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='objective_results', to='benchmark.agent')),
                        ('dev_run', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='experiments.experimentrun')),
                        ('test_run', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='objective_result', to='experiments.experimentrun')),
                        ('objective', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='results', to='experiments.objectivetask')),
                    ],
                    options={
                        'db_table': 'benchmark_objectiveresult',
                        'ordering': ['objective', '-relative_improvement'],
                    },
                ),
                migrations.CreateModel(
                    name='ReproductionCheck',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('verdict', models.CharField(choices=[('reproduced', 'Reproduced'), ('not_reproduced', 'Not reproduced'), ('could_not_run', 'Could not run')], max_length=16)),
                        ('summary', models.TextField()),
                        ('evidence', models.JSONField(blank=True, default=list)),
                        ('tolerance', models.FloatField()),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('run', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='reproduction', to='experiments.experimentrun')),
                    ],
                    options={
                        'db_table': 'benchmark_reproductioncheck',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.AddIndex(
                    model_name='experimentrun',
                    index=models.Index(fields=['submission', 'phase'], name='benchmark_e_submiss_44ebc9_idx'),
                ),
                migrations.AddIndex(
                    model_name='experimentrun',
                    index=models.Index(fields=['status'], name='benchmark_e_status_a7ee08_idx'),
                ),
                migrations.AddConstraint(
                    model_name='experimentrun',
                    constraint=models.CheckConstraint(condition=models.Q(('phase__in', ['dev', 'test', 'repro'])), name='experiment_phase_valid'),
                ),
                migrations.AddConstraint(
                    model_name='experimentrun',
                    constraint=models.CheckConstraint(condition=models.Q(('status__in', ['queued', 'running', 'succeeded', 'failed', 'timed_out', 'cancelled'])), name='experiment_status_valid'),
                ),
                migrations.AddConstraint(
                    model_name='experimentrun',
                    constraint=models.CheckConstraint(condition=models.Q(('limit_hit__in', ['', 'wall_time', 'memory', 'processes', 'disk'])), name='experiment_limit_valid'),
                ),
                migrations.AddConstraint(
                    model_name='experimentrun',
                    constraint=models.CheckConstraint(condition=models.Q(('time_limit_seconds__gte', 1)), name='experiment_time_limit_positive'),
                ),
                migrations.AddConstraint(
                    model_name='experimentrun',
                    constraint=models.CheckConstraint(condition=models.Q(models.Q(('status__in', ('succeeded', 'failed', 'timed_out', 'cancelled')), _negated=True), ('finished_at__isnull', False), _connector='OR'), name='experiment_finished_has_time'),
                ),
                migrations.AddConstraint(
                    model_name='experimentrun',
                    constraint=models.CheckConstraint(condition=models.Q(models.Q(('status', 'running'), _negated=True), ('started_at__isnull', False), _connector='OR'), name='experiment_running_has_start'),
                ),
                migrations.AddConstraint(
                    model_name='objectivetask',
                    constraint=models.CheckConstraint(condition=models.Q(models.Q(('higher_is_better', True), ('human_score__gt', models.F('baseline_score'))), models.Q(('higher_is_better', False), ('human_score__lt', models.F('baseline_score'))), _connector='OR'), name='objective_human_beats_baseline'),
                ),
                migrations.AddConstraint(
                    model_name='objectivetask',
                    constraint=models.CheckConstraint(condition=models.Q(('metric', ''), _negated=True), name='objective_metric_not_empty'),
                ),
                migrations.AddConstraint(
                    model_name='objectivetask',
                    constraint=models.CheckConstraint(condition=models.Q(('dev_data_dir', models.F('test_data_dir')), _negated=True), name='objective_dev_is_not_test'),
                ),
                migrations.AddConstraint(
                    model_name='objectiveresult',
                    constraint=models.UniqueConstraint(fields=('objective', 'agent'), name='objective_result_once'),
                ),
                migrations.AddConstraint(
                    model_name='reproductioncheck',
                    constraint=models.CheckConstraint(condition=models.Q(('verdict__in', ['reproduced', 'not_reproduced', 'could_not_run'])), name='reproduction_verdict_valid'),
                ),
            ],
            database_operations=[],
        ),
    ]
