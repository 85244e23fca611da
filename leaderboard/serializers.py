from rest_framework import serializers

from judging.models import DimensionScore, Judgment


class DimensionScoreSerializer(serializers.ModelSerializer):
    score = serializers.FloatField()

    class Meta:
        model = DimensionScore
        fields = ["dimension", "score", "scale_min", "scale_max", "justification"]


class JudgmentSerializer(serializers.ModelSerializer):
    submission = serializers.IntegerField(source="submission_id", read_only=True)
    agent = serializers.CharField(source="submission.agent.name")
    task = serializers.CharField(source="submission.task.slug")
    stage = serializers.CharField(source="submission.stage")
    version = serializers.IntegerField(source="submission.version")
    judge = serializers.CharField(source="judge.name")
    judge_model = serializers.CharField(source="judge.model")
    judge_model_family = serializers.CharField(source="judge.model_family")
    rubric_version = serializers.IntegerField(source="rubric.version")
    cost_usd = serializers.FloatField(allow_null=True)
    scores = DimensionScoreSerializer(many=True)

    class Meta:
        model = Judgment
        fields = [
            "id",
            "submission",
            "agent",
            "task",
            "stage",
            "version",
            "judge",
            "judge_model",
            "judge_model_family",
            "rubric_version",
            "condition",
            "scores",
            "strengths",
            "weaknesses",
            "confidence",
            "has_hallucination",
            "hallucination_details",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "latency_seconds",
            "imported",
            "finished_at",
        ]


class LeaderboardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    agent = serializers.CharField()
    display_name = serializers.CharField()
    base_model = serializers.CharField()
    coding_agent = serializers.CharField()
    scaffold = serializers.CharField()
    model_family = serializers.CharField()
    n_tasks = serializers.IntegerField()
    scores = serializers.DictField(child=serializers.FloatField())
    overall_ci = serializers.ListField(
        child=serializers.FloatField(), min_length=2, max_length=2, allow_null=True
    )
    fabrication_rate = serializers.FloatField(allow_null=True)
    cost_usd_per_task = serializers.FloatField(allow_null=True)
    human_overall = serializers.FloatField(allow_null=True)
    same_family_judge = serializers.BooleanField()
    reproduced_rate = serializers.FloatField(
        allow_null=True,
        help_text="Share of the agent's reproduction-checked tasks found reproduced "
        "(experiment and end2end stages).",
    )
    not_reproduced_rate = serializers.FloatField(
        allow_null=True, help_text="Share of the checked tasks found not reproduced."
    )
    reproduction_checked = serializers.IntegerField(
        help_text="Tasks whose counted submission has a reproduction check."
    )
    url = serializers.CharField(help_text="The agent's page.")


class LeaderboardDimensionSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()


class LeaderboardSerializer(serializers.Serializer):
    stage = serializers.CharField()
    condition = serializers.CharField()
    filters = serializers.DictField()
    acceptance_line = serializers.FloatField()
    n_tasks = serializers.IntegerField(help_text="Tasks that count in this view.")
    has_reproduction = serializers.BooleanField(
        help_text="Whether any listed agent has a reproduction verdict."
    )
    dimensions = LeaderboardDimensionSerializer(many=True)
    rows = LeaderboardRowSerializer(many=True)


class ObjectiveTaskResultSerializer(serializers.Serializer):
    task = serializers.CharField()
    title = serializers.CharField()
    metric = serializers.CharField()
    higher_is_better = serializers.BooleanField()
    score = serializers.FloatField(help_text="The raw test score in the task's metric.")
    relative_improvement = serializers.FloatField(
        help_text="(score - baseline) / (top human - baseline) x 100."
    )
    runtime_seconds = serializers.FloatField(allow_null=True)
    lloc = serializers.IntegerField(help_text="Logical lines of code of the method.")
    submission = serializers.IntegerField()
    trials = serializers.IntegerField(help_text="The agent's trials evaluated on test.")
    best_relative_improvement = serializers.FloatField()
    mean_relative_improvement_of_trials = serializers.FloatField(
        help_text="A trial whose test run gave no score counts as the baseline (0)."
    )
    beat_baseline_share = serializers.FloatField(help_text="Share of trials above 0%.")
    task_version = serializers.IntegerField(help_text="The task version of the results.")


class SubjectiveObjectiveSerializer(serializers.Serializer):
    dimension = serializers.CharField(help_text="One of MLRC-Bench's five dimensions.")
    condition = serializers.CharField(help_text="`with_code` or `no_code`.")
    n = serializers.IntegerField(help_text="Evaluated methods the judges scored.")
    spearman_rho = serializers.FloatField(
        allow_null=True, help_text="Judges' mean score against test relative improvement."
    )
    ci = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="95% bootstrap interval."
    )


class ObjectiveLeaderboardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    agent = serializers.CharField()
    display_name = serializers.CharField()
    n_tasks = serializers.IntegerField()
    mean_relative_improvement = serializers.FloatField()
    tasks = ObjectiveTaskResultSerializer(many=True)
    url = serializers.CharField(help_text="The agent's page.")


class ObjectiveLeaderboardSerializer(serializers.Serializer):
    stage = serializers.CharField(help_text="`objective`.")
    n_tasks = serializers.IntegerField()
    rows = ObjectiveLeaderboardRowSerializer(many=True)
    subjective_objective = SubjectiveObjectiveSerializer(many=True)
