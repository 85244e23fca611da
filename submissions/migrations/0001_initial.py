"""The submission tables, taken over from the benchmark app where they were
created: state only, the tables keep their names (`db_table`), rows, indexes
and constraints."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('benchmark', '0018_submissions_moving'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Submission',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('stage', models.CharField(choices=[('idea', 'Idea'), ('proposal', 'Proposal'), ('experiment', 'Experiment'), ('paper', 'Paper'), ('end2end', 'End to end'), ('method', 'Method')], max_length=16)),
                        ('version', models.PositiveIntegerField(default=1)),
                        ('source', models.CharField(choices=[('upload', 'Browser upload'), ('api', 'API'), ('import', 'Import')], max_length=16)),
                        ('archive_sha256', models.CharField(max_length=64)),
                        ('content_sha256', models.CharField(blank=True, default='', max_length=64)),
                        ('status', models.CharField(choices=[('received', 'Received'), ('ready', 'Ready'), ('failed', 'Failed')], default='received', max_length=16)),
                        ('error', models.TextField(blank=True)),
                        ('llm_cost_usd', models.DecimalField(blank=True, decimal_places=6, max_digits=12, null=True)),
                        ('llm_unpriced_steps', models.PositiveSmallIntegerField(default=0)),
                        ('agent_cost_usd', models.DecimalField(blank=True, decimal_places=6, max_digits=12, null=True)),
                        ('agent_duration_seconds', models.FloatField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('agent', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='submissions', to='benchmark.agent')),
                        ('task', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='submissions', to='benchmark.task')),
                        ('uploader', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='submissions', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'benchmark_submission',
                        'ordering': ['-created_at', '-id'],
                    },
                ),
                migrations.CreateModel(
                    name='Artifact',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('task', 'Task'), ('idea', 'Idea'), ('proposal', 'Proposal'), ('related_work', 'Related work'), ('paper', 'Paper'), ('results', 'Results'), ('log', 'Execution log'), ('trace', 'Coding-agent trace'), ('code', 'Code'), ('figure', 'Figure'), ('data', 'Data'), ('token_usage', 'Token usage'), ('other', 'Other')], max_length=16)),
                        ('path', models.CharField(help_text='Relative path inside the run.', max_length=500)),
                        ('size', models.PositiveBigIntegerField()),
                        ('sha256', models.CharField(max_length=64)),
                        ('file', models.FileField(max_length=700, upload_to='')),
                        ('submission', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='artifacts', to='submissions.submission')),
                    ],
                    options={
                        'db_table': 'benchmark_artifact',
                        'ordering': ['path'],
                    },
                ),
                migrations.CreateModel(
                    name='SubmissionInput',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('position', models.PositiveSmallIntegerField()),
                        ('based_on', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='outputs', to='submissions.submission')),
                        ('submission', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='inputs', to='submissions.submission')),
                    ],
                    options={
                        'db_table': 'benchmark_submissioninput',
                        'ordering': ['submission', 'position'],
                    },
                ),
                migrations.AddField(
                    model_name='submission',
                    name='based_on',
                    field=models.ManyToManyField(blank=True, related_name='used_by', through='submissions.SubmissionInput', through_fields=('submission', 'based_on'), to='submissions.submission'),
                ),
                migrations.CreateModel(
                    name='DerivedArtifact',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('pdf_text', 'Text extracted from a PDF'), ('html', 'Clean HTML of a markdown document'), ('trace_steps', 'Steps of a coding-agent trace'), ('source_html', 'Highlighted HTML of a source file')], max_length=16)),
                        ('file', models.FileField(blank=True, max_length=700, upload_to='')),
                        ('size', models.PositiveBigIntegerField()),
                        ('pages', models.PositiveIntegerField(default=0)),
                        ('truncated', models.BooleanField(default=False)),
                        ('source_sha256', models.CharField(blank=True, default='', max_length=64)),
                        ('version', models.PositiveIntegerField(default=1)),
                        ('content', models.TextField(blank=True, default='')),
                        ('note', models.CharField(blank=True, default='', max_length=300)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('artifact', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='derived', to='submissions.artifact')),
                    ],
                    options={
                        'db_table': 'benchmark_derivedartifact',
                        'ordering': ['artifact', 'kind'],
                        'constraints': [models.UniqueConstraint(fields=('artifact', 'kind'), name='derived_artifact_unique'), models.CheckConstraint(condition=models.Q(('kind__in', ['pdf_text', 'html', 'trace_steps', 'source_html'])), name='derived_artifact_kind_valid')],
                    },
                ),
                migrations.AddConstraint(
                    model_name='artifact',
                    constraint=models.UniqueConstraint(fields=('submission', 'path'), name='artifact_path_unique'),
                ),
                migrations.AddConstraint(
                    model_name='artifact',
                    constraint=models.CheckConstraint(condition=models.Q(('kind__in', ['task', 'idea', 'proposal', 'related_work', 'paper', 'results', 'log', 'trace', 'code', 'figure', 'data', 'token_usage', 'other'])), name='artifact_kind_valid'),
                ),
                migrations.AddConstraint(
                    model_name='submissioninput',
                    constraint=models.UniqueConstraint(fields=('submission', 'based_on'), name='submission_input_unique'),
                ),
                migrations.AddConstraint(
                    model_name='submissioninput',
                    constraint=models.UniqueConstraint(fields=('submission', 'position'), name='submission_input_position_unique'),
                ),
                migrations.AddConstraint(
                    model_name='submissioninput',
                    constraint=models.CheckConstraint(condition=models.Q(('submission', models.F('based_on')), _negated=True), name='submission_input_not_itself'),
                ),
                migrations.AddIndex(
                    model_name='submission',
                    index=models.Index(fields=['stage', 'status'], name='benchmark_s_stage_760f91_idx'),
                ),
                migrations.AddConstraint(
                    model_name='submission',
                    constraint=models.UniqueConstraint(fields=('agent', 'task', 'stage', 'version'), name='submission_version_unique'),
                ),
                migrations.AddConstraint(
                    model_name='submission',
                    constraint=models.UniqueConstraint(fields=('agent', 'task', 'stage', 'archive_sha256'), name='submission_archive_unique'),
                ),
                migrations.AddConstraint(
                    model_name='submission',
                    constraint=models.UniqueConstraint(condition=models.Q(('content_sha256', ''), _negated=True), fields=('agent', 'task', 'stage', 'content_sha256'), name='submission_content_unique'),
                ),
                migrations.AddConstraint(
                    model_name='submission',
                    constraint=models.CheckConstraint(condition=models.Q(('stage__in', ['idea', 'proposal', 'experiment', 'paper', 'end2end', 'method'])), name='submission_stage_valid'),
                ),
                migrations.AddConstraint(
                    model_name='submission',
                    constraint=models.CheckConstraint(condition=models.Q(('source__in', ['upload', 'api', 'import'])), name='submission_source_valid'),
                ),
                migrations.AddConstraint(
                    model_name='submission',
                    constraint=models.CheckConstraint(condition=models.Q(('status__in', ['received', 'ready', 'failed'])), name='submission_status_valid'),
                ),
                migrations.AddConstraint(
                    model_name='submission',
                    constraint=models.CheckConstraint(condition=models.Q(('version__gte', 1)), name='submission_version_positive'),
                ),
            ],
            database_operations=[],
        ),
    ]
