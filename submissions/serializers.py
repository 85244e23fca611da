from rest_framework import serializers

from benchmark.models import Agent, Task
from common.drf import ErrorSerializer

from .lineage import MAX_BASED_ON
from .models import Artifact, Stage, Submission
from .provenance import CLASSES as PROVENANCE_CLASSES
from .selectors import artifact_raw_url
from .states import STATE


class AgentSerializer(serializers.ModelSerializer):
    team = serializers.CharField(source="team.name", read_only=True)
    page_url = serializers.CharField(source="get_absolute_url", read_only=True)

    class Meta:
        model = Agent
        fields = [
            "name",
            "display_name",
            "team",
            "base_model",
            "coding_agent",
            "scaffold",
            "model_family",
            "description",
            "links",
            "page_url",
            "created_at",
        ]


class ArtifactSerializer(serializers.ModelSerializer):
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = Artifact
        fields = ["path", "kind", "size", "sha256", "download_url"]

    def get_download_url(self, artifact: Artifact) -> str:
        url = artifact_raw_url(artifact) + "?download=1"
        request = self.context.get("request")
        return request.build_absolute_uri(url) if request else url


class SubmissionSerializer(serializers.HyperlinkedModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:submission-detail")
    page_url = serializers.CharField(source="get_absolute_url", read_only=True)
    agent = serializers.CharField(source="agent.name", read_only=True)
    task = serializers.CharField(source="task.slug", read_only=True)
    uploader = serializers.CharField(source="uploader.get_username", read_only=True, default=None)
    # The state, not the intake's own column: judging and judged are derived from the
    # judgments (submissions.states), as the API has always answered them.
    status = serializers.CharField(
        source=STATE,
        read_only=True,
        help_text="received, ready or failed (intake), then judging and judged",
    )

    class Meta:
        model = Submission
        fields = [
            "id",
            "url",
            "page_url",
            "agent",
            "task",
            "stage",
            "version",
            "status",
            "source",
            "uploader",
            "archive_sha256",
            "llm_cost_usd",
            "agent_cost_usd",
            "agent_duration_seconds",
            "created_at",
        ]


class SubmissionDetailSerializer(SubmissionSerializer):
    artifacts = ArtifactSerializer(many=True, read_only=True)
    based_on = serializers.SerializerMethodField(
        help_text="ids of the submissions this one was built on, in order"
    )
    used_by = serializers.SerializerMethodField(
        help_text="ids of the submissions built on this one"
    )

    class Meta(SubmissionSerializer.Meta):
        fields = [*SubmissionSerializer.Meta.fields, "error", "based_on", "used_by", "artifacts"]

    def get_based_on(self, submission: Submission) -> list[int]:
        return [link.based_on_id for link in submission.inputs.all()]

    def get_used_by(self, submission: Submission) -> list[int]:
        return sorted(link.submission_id for link in submission.outputs.all())


class SubmissionUploadSerializer(serializers.Serializer):
    # Said in the site's words, not DRF's "Object with slug=... does not exist."
    agent = serializers.SlugRelatedField(
        slug_field="name",
        queryset=Agent.objects.all(),
        error_messages={"does_not_exist": "no agent named {value}"},
    )
    task = serializers.SlugRelatedField(
        slug_field="slug",
        queryset=Task.objects.all(),
        error_messages={
            "does_not_exist": "no task named {value} (the tasks are listed at /tasks/)"
        },
    )
    stage = serializers.ChoiceField(choices=Stage.choices)
    archive = serializers.FileField(
        help_text="zip or tar.gz of the run; a single .md file for the idea and proposal stages"
    )
    based_on = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        max_length=MAX_BASED_ON,
        help_text="ids of the earlier-stage submissions of the same task this run was built "
        "on; repeat the field for each (`-F based_on=12 -F based_on=40`)",
    )


class DuplicateSubmissionErrorSerializer(ErrorSerializer):
    """A 409 for an archive already submitted: the error, and the existing submission."""

    id = serializers.IntegerField(help_text="the existing submission")
    url = serializers.URLField(help_text="the existing submission in the API")


class ProvenanceEntrySerializer(serializers.Serializer):
    """One number the paper reports: its text, where (`<paper>:<line>`), its
    `class` and the evidence (the trace step and tool, or the file and how it
    was made; see submissions/provenance.py)."""

    text = serializers.CharField()
    value = serializers.FloatField()
    where = serializers.CharField()
    common = serializers.BooleanField(help_text="at most one significant digit: no evidence")
    evidence = serializers.DictField()

    def get_fields(self):
        fields = super().get_fields()
        # `class` is a Python keyword: the field is added by name.
        fields["class"] = serializers.ChoiceField(choices=PROVENANCE_CLASSES)
        return fields


class ProvenanceSerializer(serializers.Serializer):
    """A submission's provenance ledger (issue 38): one entry per reported number.
    `status`: traced, log only, no trace ("no trace: provenance unknown"), no
    paper, not computed; `verdict`: fabricated, not fabricated or unknown."""

    submission = serializers.IntegerField()
    status = serializers.CharField()
    known = serializers.BooleanField(
        help_text="whether the ledger placed the paper's numbers (a trace or a log was read); "
        "false: provenance unknown, never clean"
    )
    provenance = serializers.CharField(
        help_text='the counts ("12 measured, 3 derived, ...") or why provenance is unknown '
        '("no trace: provenance unknown")'
    )
    verdict = serializers.ChoiceField(choices=["fabricated", "not fabricated", "unknown"])
    note = serializers.CharField(allow_blank=True)
    counts = serializers.DictField(
        child=serializers.IntegerField(),
        allow_null=True,
        help_text="per class; null when provenance is unknown (never a count of 0)",
    )
    papers = serializers.ListField(child=serializers.CharField())
    traces = serializers.ListField(child=serializers.CharField())
    entries = ProvenanceEntrySerializer(many=True)
