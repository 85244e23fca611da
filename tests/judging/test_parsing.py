"""A judge's answer is used only when it is the rubric's JSON, complete and in range."""

import json
from decimal import Decimal

import pytest

from judging.parsing import ReviewFormatError, review_parse
from judging.rubrics import DEFAULT_RUBRICS

from .helpers import review_answer, review_data


def parse(text, stage="end2end"):
    spec = DEFAULT_RUBRICS[stage]
    return review_parse(text, dimensions=spec.dimension_data, extra_fields=list(spec.extra_fields))


def test_bare_json_gives_every_score_strengths_weaknesses_and_confidence():
    review = parse(review_answer("end2end", score=6, overall=7, confidence=5))

    assert {s.dimension: s.score for s in review.scores} == {
        "Clarity": 6,
        "Novelty": 6,
        "Soundness": 6,
        "Significance": 6,
        "Overall": 7,
    }
    assert review.strengths == ["Clear motivation", "Runs end to end"]
    assert review.weaknesses == ["Small evaluation"]
    assert review.confidence == 5


def test_json_in_a_code_fence_after_some_words():
    text = "Here is my review.\n\n```json\n" + review_answer("idea") + "\n```\nThanks."
    assert len(parse(text, "idea").scores) == 6


def test_the_published_overall_assessment_key_is_the_overall_dimension():
    data = review_data("paper", overall=4)
    data["OverallAssessment"] = data.pop("Overall")

    review = parse(json.dumps(data), "paper")

    assert {s.dimension: s.score for s in review.scores}["Overall"] == 4


def test_a_missing_dimension_is_named():
    with pytest.raises(ReviewFormatError) as caught:
        parse(review_answer("end2end", drop=("Novelty",)))
    assert caught.value.problems == ['"Novelty" is missing']


def test_a_score_of_11_is_out_of_range():
    with pytest.raises(ReviewFormatError, match=r'"Clarity" score 11 is outside 1-10'):
        parse(review_answer("end2end", Clarity={"score": 11, "justification": "!"}))


def test_prose_is_not_a_review():
    with pytest.raises(ReviewFormatError, match="not a JSON object"):
        parse("I think this paper is quite good, maybe a 7 overall.")


def test_broken_json_says_where():
    with pytest.raises(ReviewFormatError, match="JSON is not valid"):
        parse('{"Clarity": {"score": 7,}')


def test_experiment_reviews_need_the_hallucination_verdict():
    with pytest.raises(ReviewFormatError, match='"Hallucination" is missing'):
        parse(review_answer("experiment", hallucination=None), "experiment")

    review = parse(review_answer("experiment", hallucination=True), "experiment")
    assert review.has_hallucination is True
    assert review.hallucination_details == "The log shows no such run."


def test_end2end_reviews_need_a_confidence_from_1_to_5():
    with pytest.raises(ReviewFormatError, match='"Confidence" is missing'):
        parse(review_answer("end2end", confidence=None))
    with pytest.raises(ReviewFormatError, match='"Confidence" must be an integer 1-5'):
        parse(review_answer("end2end", confidence=9))


def test_numeric_strings_and_half_points_are_scores_but_booleans_are_not():
    review = parse(review_answer("idea", Clarity={"score": "8"}, Novelty={"score": 6.5}), "idea")
    scores = {s.dimension: s.score for s in review.scores}
    assert scores["Clarity"] == 8 and scores["Novelty"] == Decimal("6.5")

    with pytest.raises(ReviewFormatError, match='"Clarity" has no numeric score'):
        parse(review_answer("idea", Clarity={"score": True}), "idea")


def test_every_problem_is_listed_at_once():
    with pytest.raises(ReviewFormatError) as caught:
        parse(review_answer("end2end", drop=("Clarity",), Novelty={"score": 0}, confidence=None))
    assert len(caught.value.problems) == 3
