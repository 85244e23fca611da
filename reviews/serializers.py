"""API answers of human review that have a fixed shape: the agreement
statistics. The field order is the answer's key order."""

from rest_framework import serializers


def _figure() -> serializers.FloatField:
    return serializers.FloatField(allow_null=True)


def _interval() -> serializers.ListField:
    return serializers.ListField(
        child=serializers.FloatField(), min_length=2, max_length=2, allow_null=True
    )


class DimensionAgreementSerializer(serializers.Serializer):
    """One `reviews.agreement.DimensionAgreement`: a figure is null below the
    minimum amount of data, and `unavailable` says why, by field name."""

    dimension = serializers.CharField()
    n_papers = serializers.IntegerField()
    n_reviews = serializers.IntegerField()
    n_papers_with_llm = serializers.IntegerField()
    n_human_human = serializers.IntegerField()
    n_human_llm = serializers.IntegerField()
    mean_abs_diff_human_human = _figure()
    median_abs_diff_human_human = _figure()
    mean_abs_diff_human_llm = _figure()
    median_abs_diff_human_llm = _figure()
    u_statistic = _figure()
    p_value = _figure()
    rank_biserial = _figure()
    krippendorff_alpha_humans = _figure()
    krippendorff_alpha_humans_llm = _figure()
    spearman_rho = _figure()
    spearman_p_value = _figure()
    n_papers_spearman = serializers.IntegerField()
    ci_mean_abs_diff_human_human = _interval()
    ci_mean_abs_diff_human_llm = _interval()
    ci_mean_abs_diff_difference = _interval()
    p_value_holm = _figure()
    unavailable = serializers.DictField(child=serializers.CharField())


class StageAgreementSerializer(serializers.Serializer):
    """A `reviews.selectors.StageAgreement` (without the dashboard's plot data)."""

    stage = serializers.CharField()
    judge = serializers.CharField(allow_null=True)
    reviews = serializers.ChoiceField(
        choices=["released", "submitted"],
        help_text="The human reviews counted: released ones (public), or every submitted one.",
    )
    dimensions = DimensionAgreementSerializer(many=True)
