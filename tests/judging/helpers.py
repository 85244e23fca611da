"""Judge answers for the fake server, shaped by the project's own rubrics."""

import json

from judging.rubrics import CONFIDENCE, DEFAULT_RUBRICS, HALLUCINATION, OVERALL


def review_data(
    stage: str,
    *,
    score: int = 7,
    overall: int | None = None,
    hallucination: bool | None = False,
    confidence: int | None = 4,
    drop: tuple[str, ...] = (),
    **overrides,
) -> dict:
    spec = DEFAULT_RUBRICS[stage]
    data: dict = {}
    for dimension in spec.dimensions:
        if dimension.key == OVERALL:
            data[OVERALL] = {
                "score": overall if overall is not None else score,
                "justification": "Overall, solid work.",
                "strengths": ["Clear motivation", "Runs end to end"],
                "weaknesses": ["Small evaluation"],
            }
        else:
            data[dimension.key] = {
                "score": score,
                "justification": f"{dimension.key} justification.",
            }
    if HALLUCINATION in spec.extra_fields + spec.optional_fields and hallucination is not None:
        data[HALLUCINATION] = {
            "has_hallucination": hallucination,
            "details": "The log shows no such run." if hallucination else "Matches the log.",
        }
    if CONFIDENCE in spec.extra_fields and confidence is not None:
        data[CONFIDENCE] = confidence
    for key in drop:
        data.pop(key, None)
    data.update(overrides)
    return data


def review_answer(stage: str, **kwargs) -> str:
    return json.dumps(review_data(stage, **kwargs), indent=2)
