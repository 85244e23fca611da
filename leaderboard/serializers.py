from django.urls import reverse
from rest_framework import serializers

from judging.models import DimensionScore, HallucinationFinding, Judgment

from .selectors.objective import OBJECTIVE_STAGE


class DimensionScoreSerializer(serializers.ModelSerializer):
    score = serializers.FloatField()

    class Meta:
        model = DimensionScore
        fields = ["dimension", "score", "scale_min", "scale_max", "justification"]


class HallucinationFindingSerializer(serializers.ModelSerializer):
    class Meta:
        model = HallucinationFinding
        fields = ["type", "description", "evidence"]


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
    findings = HallucinationFindingSerializer(many=True)

    class Meta:
        model = Judgment
        fields = [
            "id",
            "kind",
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
            "findings",
            "overall_assessment",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "latency_seconds",
            "imported",
            "finished_at",
        ]


# --- the leaderboard's answers -------------------------------------------------------
#
# These serializers are the one definition of a leaderboard row: the API's JSON
# is their output, the CSV's columns are their fields in order (`leaderboard.tables`
# flattens nested fields), and the page's tables show every field they list.

DECIMALS = 4


class RoundedFloatField(serializers.FloatField):
    """A float rounded to four decimals: more would only be noise of the means."""

    def to_representation(self, value: float) -> float:  # type: ignore[override]
        return round(float(value), DECIMALS)


class IntervalField(serializers.ListField):
    """`[low, high]` or null; a CSV writes it as the columns `<name>_low`, `<name>_high`."""

    csv_suffixes = ("low", "high")

    def __init__(self, **kwargs) -> None:
        super().__init__(
            child=RoundedFloatField(), min_length=2, max_length=2, allow_null=True, **kwargs
        )


class IntervalDictField(serializers.DictField):
    """`{key: [low, high] or null}`; a CSV writes the columns `<key>_ci_low`,
    `<key>_ci_high` for each key (the dimensions)."""

    csv_suffixes = ("ci_low", "ci_high")

    def __init__(self, **kwargs) -> None:
        super().__init__(child=IntervalField(), **kwargs)


class AgentPageField(serializers.CharField):
    """The page of the agent named by the source attribute."""

    def to_representation(self, value) -> str:
        return reverse("leaderboard:agent-detail", kwargs={"name": value})


class BlankAsNullCharField(serializers.CharField):
    """A text filter: null when not chosen (an empty string)."""

    def get_attribute(self, instance):
        return super().get_attribute(instance) or None


class LeaderboardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField(
        help_text="1 + the number of agents significantly better (paired bootstrap of the "
        "Overall difference on common tasks, Holm-corrected): agents that cannot be told "
        "apart share a rank."
    )
    rank_strict = serializers.IntegerField(help_text="The position by mean Overall alone.")
    n_better = serializers.IntegerField(help_text="Agents significantly better than this one.")
    agent = serializers.CharField()
    display_name = serializers.CharField()
    base_model = serializers.CharField()
    coding_agent = serializers.CharField()
    scaffold = serializers.CharField()
    model_family = serializers.CharField()
    n_tasks = serializers.IntegerField()
    scores = serializers.DictField(
        child=RoundedFloatField(),
        help_text="Mean over the agent's tasks per dimension, in the order of `dimensions`; "
        "a CSV has one column per dimension key.",
    )
    overall_ci = IntervalField()
    scores_ci = IntervalDictField(
        help_text="Each dimension's 95% bootstrap interval over the agent's tasks."
    )
    fabrication_rate = RoundedFloatField(
        allow_null=True,
        help_text="Share of the agent's tasks the judges flag for any hallucination under "
        "`fabrication_rule` (experiment and end2end stages).",
    )
    fabrication_rule = serializers.CharField(
        help_text="How the judges' flags combine: `any` (the default), `majority` or `all`."
    )
    human_fabrication_rate = RoundedFloatField(
        allow_null=True,
        help_text="Share of the agent's expert-checked tasks the experts flag for any "
        "hallucination type (`Not Sure` left out).",
    )
    cost_usd_per_task = RoundedFloatField(
        allow_null=True,
        help_text="Mean recorded cost per task; a lower bound when `cost_unpriced_steps` > 0.",
    )
    cost_unpriced_steps = serializers.IntegerField(
        help_text="LLM steps behind the cost that no price table prices: the cost is "
        "then 'at least'."
    )
    pareto_optimal = serializers.BooleanField(
        help_text="No fully priced agent is cheaper per task and at least as good on Overall."
    )
    human_overall = RoundedFloatField(allow_null=True)
    same_family_judge = serializers.BooleanField()
    reproduced_rate = RoundedFloatField(
        allow_null=True,
        help_text="Share of the agent's reproduction-checked tasks found reproduced "
        "(experiment and end2end stages).",
    )
    not_reproduced_rate = RoundedFloatField(
        allow_null=True, help_text="Share of the checked tasks found not reproduced."
    )
    reproduction_checked = serializers.IntegerField(
        help_text="Tasks whose counted submission has a reproduction check."
    )
    panel = BlankAsNullCharField(
        allow_null=True,
        help_text="The judge panel whose judges' mean these scores are; null: every judge "
        "(a site without panels).",
    )
    url = AgentPageField(source="agent", help_text="The agent's page.")

    class Meta:
        # A link to a page of the site is not data to download.
        csv_exclude = ("url",)


class LeaderboardDimensionSerializer(serializers.Serializer):
    key = serializers.CharField()
    # A field named like Field.label, which the stubs type as a string.
    label = serializers.CharField()  # type: ignore[assignment]


class LeaderboardFiltersSerializer(serializers.Serializer):
    conference = BlankAsNullCharField(source="board.query.conference", allow_null=True)
    year = serializers.IntegerField(source="board.query.year", allow_null=True)
    topic = BlankAsNullCharField(source="board.query.topic", allow_null=True)
    task = BlankAsNullCharField(source="board.query.task", allow_null=True)
    judge = BlankAsNullCharField(source="board.query.judge", allow_null=True)
    exclude_same_family = serializers.BooleanField(source="board.query.exclude_same_family")
    common_tasks = serializers.BooleanField(source="board.query.common_tasks")
    fabrication_rule = serializers.CharField(source="board.query.fabrication_rule")
    sort = BlankAsNullCharField(allow_null=True)


class PanelSerializer(serializers.Serializer):
    """A `judging.selectors.PanelChoice`."""

    name = serializers.CharField()
    judges = serializers.ListField(child=serializers.CharField(), source="judge_names")
    is_default = serializers.BooleanField(help_text="The stage's default panel.")


class NotCountedSerializer(serializers.Serializer):
    submission = serializers.IntegerField(source="submission_id")
    agent = serializers.CharField()
    task = serializers.CharField()
    version = serializers.IntegerField()
    reason = serializers.CharField(help_text="Which panel judge failed (and why) or is at work.")


class LeaderboardSerializer(serializers.Serializer):
    """A `leaderboard.payloads.LeaderboardView`: a stage's board, its rows in the order asked."""

    stage = serializers.CharField(source="board.query.stage")
    condition = serializers.CharField(source="board.query.condition")
    filters = LeaderboardFiltersSerializer(source="*")
    acceptance_line = serializers.FloatField()
    n_tasks = serializers.IntegerField(
        source="board.n_tasks", help_text="Tasks that count in this view."
    )
    has_reproduction = serializers.BooleanField(
        source="board.has_reproduction",
        help_text="Whether any listed agent has a reproduction verdict.",
    )
    panel = BlankAsNullCharField(
        source="board.panel.name",
        allow_null=True,
        default="",
        help_text="The judge panel the scores come from (`?panel=NAME`, default the "
        "stage's); null: every judge (a site without panels).",
    )
    panel_detail = PanelSerializer(source="board.panel", allow_null=True)
    dimensions = LeaderboardDimensionSerializer(many=True, source="board.dimensions")
    rows = LeaderboardRowSerializer(many=True)
    not_counted = NotCountedSerializer(
        many=True,
        source="board.not_counted",
        help_text="Submissions left out because a panel judge failed on them or has not "
        "finished (the newest version of an agent's task), with the reason.",
    )


class ObjectiveTaskResultSerializer(serializers.Serializer):
    task = serializers.CharField(source="task_slug")
    title = serializers.CharField(source="task_title")
    metric = serializers.CharField()
    higher_is_better = serializers.BooleanField()
    score = serializers.FloatField(help_text="The raw test score in the task's metric.")
    relative_improvement = RoundedFloatField(
        help_text="(score - baseline) / (top human - baseline) x 100."
    )
    runtime_seconds = RoundedFloatField(allow_null=True)
    lloc = serializers.IntegerField(help_text="Logical lines of code of the method.")
    submission = serializers.IntegerField(source="submission_id")
    trials = serializers.IntegerField(help_text="The agent's trials evaluated on test.")
    best_relative_improvement = RoundedFloatField(
        help_text="The best trial's (the score, runtime and lines are that trial's)."
    )
    mean_relative_improvement_of_trials = RoundedFloatField(
        help_text="A trial whose test run gave no score counts as the baseline (0)."
    )
    beat_baseline_share = RoundedFloatField(help_text="Share of trials above 0%.")
    task_version = serializers.IntegerField(help_text="The task version of the results.")
    test_score_source = serializers.CharField(
        help_text="Where a test score obtained elsewhere comes from ('' for a test run here)."
    )
    idea_source = serializers.CharField(
        help_text="The best trial's configuration: none, human, agent, or a label such as coi."
    )
    baseline_score = serializers.FloatField(allow_null=True)
    absolute_improvement = RoundedFloatField(
        allow_null=True, help_text="score - baseline, in the metric's direction."
    )
    percent_improvement = RoundedFloatField(
        allow_null=True,
        help_text="The site's own: (score - baseline) / |baseline| x 100, in its direction "
        "(not MLRC-Bench's improvement_perc: see /api/objective/analyses/ `mlrc_bench`).",
    )
    scoring_forgeable = serializers.BooleanField(
        allow_null=True,
        help_text="true: the task's scoring reads labels from the method's own output, so "
        "this score could be forged; null: not checked (GET /api/objective/tasks/SLUG/).",
    )

    class Meta:
        # The CSV names the task by its slug; the title is for people.
        csv_exclude = ("title",)


class SubjectiveObjectiveSerializer(serializers.Serializer):
    """A `judging.subjective_objective.Correlation`: the site's own measure."""

    dimension = serializers.CharField(help_text="A dimension of the site's method rubric.")
    condition = serializers.CharField(help_text="`with_code` or `no_code`.")
    n = serializers.IntegerField(help_text="Evaluated methods the judges scored.")
    spearman_rho = RoundedFloatField(
        allow_null=True, help_text="Judges' mean score against the test relative improvement."
    )
    ci = IntervalField(help_text="95% percentile bootstrap interval over the methods.")


class ObjectiveLeaderboardRowSerializer(serializers.Serializer):
    """A `leaderboard.selectors.objective.RankedObjectiveRow`."""

    rank = serializers.IntegerField()
    agent = serializers.CharField(source="row.agent_name")
    display_name = serializers.CharField(source="row.agent_display_name")
    n_tasks = serializers.IntegerField(source="row.task_count")
    mean_relative_improvement = RoundedFloatField(source="row.mean_relative_improvement")
    best_of_k = serializers.ListField(
        source="row.best_of_k",
        child=serializers.DictField(),
        help_text="The site's own best of k (not MLRC-Bench's Pass@k: that is "
        "`mlrc_pass_at_k`): for k = 1..K, `share` of the agent's `n` tasks with at least k "
        "trials where the best of its first k trials' test results beats the baseline.",
    )
    mlrc_pass_at_k = serializers.DictField(
        source="row.mlrc_pass_at_k",
        allow_null=True,
        help_text="MLRC-Bench's Pass@k (plot.py compute_pass_at_k_data), averaged over the "
        "agent's tasks: `pass_at_k` [{k, value}] for k = 1..8, each task's 1 - C(8-c, k) / "
        "C(8, k) with c its trials (the last 8) whose best dev improvement_perc exceeds 5%; "
        "`n_tasks`: the tasks with a dev baseline. null: none has one.",
    )
    tasks = ObjectiveTaskResultSerializer(
        many=True, source="row.tasks", help_text="A CSV has one row per agent and task."
    )
    url = AgentPageField(source="row.agent_name", help_text="The agent's page.")

    class Meta:
        # best_of_k and mlrc_pass_at_k are tables of their own (k x share), not columns.
        csv_exclude = ("url", "best_of_k", "mlrc_pass_at_k")


class ObjectiveLeaderboardSerializer(serializers.Serializer):
    """A `leaderboard.selectors.objective.ObjectiveBoard`."""

    stage = serializers.SerializerMethodField(help_text="`objective`.")
    n_tasks = serializers.IntegerField()
    rows = ObjectiveLeaderboardRowSerializer(many=True)
    subjective_objective = SubjectiveObjectiveSerializer(
        many=True,
        help_text="The site's own measure: Spearman's rho of the LLM judges' scores of the "
        "methods (the site's method rubric) against their test relative improvement.",
    )
    mlrc_judge_correlation = serializers.DictField(
        help_text="MLRC-Bench's measure (plot.py plot_correlation_heatmaps): Pearson's r of "
        "its five 1-5 ratings against test improvement_perc, -relative_runtime and "
        "-relative_complexity over the test trials, per condition (`cells`, each with n)."
    )
    idea_source = serializers.CharField(
        allow_null=True,
        help_text="The configuration the rows are of (`?idea_source=`); null: every one.",
    )
    idea_sources = serializers.ListField(
        child=serializers.CharField(),
        help_text="The configurations (idea sources) of the evaluated trials: the filter's values.",
    )

    def get_stage(self, board) -> str:
        return OBJECTIVE_STAGE


# --- fabrication -----------------------------------------------------------------------


class TypeShareSerializer(serializers.Serializer):
    n = serializers.IntegerField(help_text="Tasks with a verdict on this type.")
    flagged = serializers.IntegerField()
    not_sure = serializers.IntegerField(help_text="Experts' `Not Sure` answers, left out of n.")
    rate = RoundedFloatField(allow_null=True)
    ci = IntervalField(help_text="95% Wilson interval of the rate.")


class FabricationRowSerializer(serializers.Serializer):
    """A `leaderboard.selectors.fabrication.FabricationRow`."""

    agent = serializers.CharField()
    # A field named like Field.source, which the stubs type as a string.
    source = serializers.CharField(  # type: ignore[assignment]
        help_text="`judges` (combined under the rule), `judge:<name>`, `human` or `reproduction`."
    )
    n_tasks = serializers.IntegerField()
    flagged = serializers.IntegerField()
    rate = RoundedFloatField(allow_null=True, help_text="Share of tasks with any hallucination.")
    by_type = serializers.DictField(child=TypeShareSerializer())


class DetectionSerializer(serializers.Serializer):
    """A `leaderboard.selectors.fabrication.DetectionRow`: a detector against a reference."""

    detector = serializers.CharField(help_text="`judge:<name>`, or `judges` under `rule`.")
    rule = serializers.CharField(allow_null=True)
    reference = serializers.CharField(help_text="`human` or `reproduction`.")
    type = serializers.CharField(help_text="A hallucination type, or `any`.")
    n = serializers.IntegerField(source="agreement.n", help_text="Papers compared.")
    true_positive = serializers.IntegerField(source="agreement.true_positive")
    false_positive = serializers.IntegerField(source="agreement.false_positive")
    false_negative = serializers.IntegerField(source="agreement.false_negative")
    true_negative = serializers.IntegerField(source="agreement.true_negative")
    precision = RoundedFloatField(source="agreement.precision", allow_null=True)
    recall = RoundedFloatField(source="agreement.recall", allow_null=True)
    f1 = RoundedFloatField(source="agreement.f1", allow_null=True)
    kappa = RoundedFloatField(source="agreement.kappa", allow_null=True)


class FabricationSerializer(serializers.Serializer):
    """A `leaderboard.selectors.fabrication.FabricationReport`."""

    stage = serializers.CharField(source="query.stage")
    rule = serializers.CharField(source="query.rule")
    types = serializers.ListField(child=serializers.CharField())
    rows = FabricationRowSerializer(many=True)
    detection = DetectionSerializer(many=True)
    canary_recall = serializers.DictField(
        child=serializers.DictField(child=TypeShareSerializer()),
        help_text="Per judge-based source (`judges`, `judge:<name>`) and type: of the "
        "fabrications of that type planted in canaries, the share it caught with that type.",
    )


class PairedDifferenceSerializer(serializers.Serializer):
    dimension = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    n_tasks = serializers.IntegerField(source="difference.n_tasks")
    difference = RoundedFloatField(source="difference.mean", allow_null=True)
    ci = IntervalField(source="difference.interval")
    p_value = RoundedFloatField(
        source="difference.p_value",
        allow_null=True,
        help_text="Two-sided paired-bootstrap p of this one comparison (not Holm-corrected).",
    )


class TaskDifferenceSerializer(serializers.Serializer):
    task = serializers.CharField()
    title = serializers.CharField()
    a = serializers.DictField(child=RoundedFloatField())
    b = serializers.DictField(child=RoundedFloatField())
    overall_difference = RoundedFloatField(allow_null=True)


class AgentComparisonSerializer(serializers.Serializer):
    """A `leaderboard.selectors.compare.AgentComparison`: `a` minus `b`."""

    stage = serializers.CharField(source="query.stage")
    condition = serializers.CharField(source="query.condition")
    panel = BlankAsNullCharField(source="a.panel", allow_null=True)
    a = LeaderboardRowSerializer()
    b = LeaderboardRowSerializer()
    dimensions = PairedDifferenceSerializer(many=True)
    tasks = TaskDifferenceSerializer(many=True)


# --- the judges' leaderboard ---------------------------------------------------------


class CellSerializer(serializers.Serializer):
    """A `leaderboard.selectors.judges.Cell`: a figure with its n, and why it is empty."""

    value = RoundedFloatField(allow_null=True)
    n = serializers.IntegerField(help_text="How many items (judgments, gaps, papers) it rests on.")
    ci = IntervalField(source="interval")
    unavailable = serializers.CharField(help_text="Why `value` is null; empty when it is not.")


class JudgeDimensionSerializer(serializers.Serializer):
    dimension = serializers.CharField()
    mean_abs_diff = CellSerializer(help_text="Mean |judge - human| with its 95% interval.")
    spearman_rho = CellSerializer(help_text="Spearman's rho with the experts' mean per paper.")
    krippendorff_alpha = CellSerializer(help_text="Ordinal alpha of the experts with the judge.")
    mann_whitney_p = CellSerializer(
        help_text="The agreement page's test of |human - human| against |human - judge|."
    )
    mann_whitney_p_holm = CellSerializer()
    rank_biserial = CellSerializer()


class DriftSummarySerializer(serializers.Serializer):
    checked_at = serializers.CharField()
    n_rescored = serializers.IntegerField()
    max_mean_abs_change = RoundedFloatField(allow_null=True)
    mean_abs_change = serializers.DictField(child=RoundedFloatField())
    n_changed_2plus = serializers.DictField(child=serializers.IntegerField())
    flagged = serializers.BooleanField()


class CanaryTypeCellsSerializer(serializers.Serializer):
    type = serializers.CharField(help_text="The planted hallucination type.")
    recall = CellSerializer(
        help_text="Of the canaries with a planted fabrication of the type, the share it "
        "flagged with that type (Wilson interval; n: those canaries it reviewed)."
    )
    recall_any = CellSerializer(help_text="The same canaries, flagged with any type.")
    located = CellSerializer(
        help_text="The same canaries, where a finding of the type points at the planted place."
    )
    false_alarm = CellSerializer(
        help_text="Of the unchanged controls, the share it flagged with this type."
    )


class CanaryCellsSerializer(serializers.Serializer):
    by_type = CanaryTypeCellsSerializer(many=True)
    false_alarm = CellSerializer(help_text="Of the unchanged controls, the share it flagged.")
    n_twins = serializers.IntegerField(help_text="Canaries with a plant it reviewed.")
    n_controls = serializers.IntegerField(help_text="Unchanged controls it reviewed.")


class JudgeBoardRowSerializer(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=["judge", "mean", "human", "baseline"])
    model = serializers.CharField()
    model_family = serializers.CharField()
    agreement = JudgeDimensionSerializer(many=True)
    mean_score = CellSerializer(help_text="Mean Overall it gave.")
    spread = CellSerializer(help_text="Standard deviation of its Overall scores.")
    self_preference = CellSerializer(
        help_text="Its mean Overall on agents of its own model family minus on others."
    )
    length_bias = CellSerializer(help_text="Spearman's rho of paper length with its Overall.")
    cost_per_judgment = CellSerializer(help_text="Mean cost (USD) of its scoring judgments.")
    median_latency_seconds = CellSerializer(help_text="Of its scoring judgments.")
    failure_rate = CellSerializer(help_text="Failed scoring judgments over done and failed.")
    cost_per_hallucination_review = CellSerializer(
        help_text="Mean cost (USD) of its hallucination reviews, apart from the scoring."
    )
    fabrication_recall = CellSerializer(
        help_text="Of the papers the experts' hallucination check flags, the share it flags "
        "(any type), with a Wilson interval; n: the papers the experts flag."
    )
    fabrication_precision = CellSerializer(
        help_text="Of the papers it flags for any hallucination, the share the experts flag; "
        "n: the papers it flags."
    )
    drift = DriftSummarySerializer(allow_null=True, help_text="Its last drift check.")
    canaries = CanaryCellsSerializer(
        allow_null=True,
        help_text="How often it catches fabrications planted in copies of real submissions "
        "(`manage.py judge_canaries`); null for rows that are not a judge.",
    )


class JudgeBoardSerializer(serializers.Serializer):
    """A `leaderboard.selectors.judges.JudgeBoard`."""

    stage = serializers.CharField()
    overall_key = serializers.CharField()
    dimensions = serializers.ListField(child=serializers.CharField())
    n_reviews = serializers.IntegerField(help_text="Submitted human reviews of the stage.")
    sort = serializers.CharField()
    rows = JudgeBoardRowSerializer(many=True)
