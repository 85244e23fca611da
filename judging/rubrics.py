"""The project's own MLR-Judge rubrics, one per judged stage, as data.

Each stage has the dimensions of the published MLR-Judge (scores 1-10), the
overall score under the one key `Overall` (the published stage reviews call it
`OverallAssessment`; the parser accepts both), and the extra fields a stage adds:
the hallucination verdict for experiments and the confidence (1-5) for end-to-end
papers. The prompt texts here are the project's own wording; the official
MLR-Judge prompts can be loaded as a later version with `import_rubric`.

`ensure_default_rubrics` (in services) writes these as version 1; the data
migration calls it, so a fresh database can judge at once.
"""

import ast
import re
import textwrap
from dataclasses import dataclass

from common.stats import MLRC_JUDGE_DIMENSIONS as MLRC_BENCH_JUDGE_DIMENSIONS
from common.stats import MLRC_JUDGE_SCALE as MLRC_BENCH_JUDGE_SCALE

OVERALL = "Overall"
# The published stage reviews name the overall score this way.
OVERALL_ALIASES = ("OverallAssessment", "Overall Assessment", "overall")
HALLUCINATION = "Hallucination"
CONFIDENCE = "Confidence"
CONFIDENCE_RANGE = (1, 5)
SCORE_RANGE = (1, 10)

_BANDS = ("9-10", "7-8", "5-6", "3-4", "1-2")


@dataclass(frozen=True)
class DimensionSpec:
    key: str
    question: str
    levels: tuple[str, str, str, str, str]  # best band first, as in _BANDS

    def as_data(self) -> dict:
        low, high = SCORE_RANGE
        return {
            "key": self.key,
            "label": self.key,
            "question": self.question,
            "min": low,
            "max": high,
            "levels": dict(zip(_BANDS, self.levels, strict=True)),
        }


def _overall(what: str) -> DimensionSpec:
    return DimensionSpec(
        OVERALL,
        f"Taking every dimension above into account, how good is the {what} as a whole? "
        "A single critical weakness may justify a low overall score on its own.",
        (
            f"Outstanding: an exceptional {what} with no significant weakness.",
            f"Strong: a very good {what} whose weaknesses are minor.",
            f"Acceptable: a solid {what} with a balance of strengths and real weaknesses.",
            f"Weak: notable weaknesses limit the value of the {what}.",
            f"Poor: the {what} is fundamentally flawed.",
        ),
    )


def _consistency(what: str, against: str) -> DimensionSpec:
    return DimensionSpec(
        "Consistency",
        f"How well does the {what} match {against}, without contradictions?",
        (
            f"Fully aligned with {against}; nothing contradicts it.",
            "Mostly aligned; only minor gaps or contradictions.",
            "Partly aligned; several points are missing or unclear.",
            "Poorly aligned; many requirements are missed or contradicted.",
            f"Unrelated to {against} or contradicting it throughout.",
        ),
    )


def _clarity(what: str) -> DimensionSpec:
    return DimensionSpec(
        "Clarity",
        f"Is the {what} clearly written, well structured and unambiguous?",
        (
            "Crystal clear, logically structured, nothing ambiguous.",
            "Clear with minor ambiguities or structural issues.",
            "Understandable, but several parts need more explanation.",
            "Hard to follow; major clarifications needed.",
            "Very unclear, vague or disorganised.",
        ),
    )


def _novelty(what: str) -> DimensionSpec:
    return DimensionSpec(
        "Novelty",
        f"How original is the {what} compared with existing work?",
        (
            "Highly original; a substantially new concept, method or finding.",
            "Notably original; fresh perspectives or new combinations.",
            "Some novel aspects, but close to existing approaches.",
            "Minimal originality; a slight variation of known work.",
            "No originality; restates common or existing work.",
        ),
    )


def _soundness(what: str, extra: str = "") -> DimensionSpec:
    return DimensionSpec(
        "Soundness",
        f"Are the methods, reasoning and conclusions of the {what} rigorous and well "
        f"supported?{extra}",
        (
            "Rigorous and well supported; no flaw of substance.",
            "Generally sound with minor issues.",
            "Some weaknesses in rigour; the main claims are only partly supported.",
            "Major flaws cast doubt on the conclusions.",
            "Fundamentally unsound; conclusions unsupported.",
        ),
    )


def _feasibility(what: str) -> DimensionSpec:
    return DimensionSpec(
        "Feasibility",
        f"Could the {what} be carried out with current methods, data and resources?",
        (
            "Straightforward to carry out with current resources.",
            "Largely feasible; moderate refinement needed.",
            "Feasible with considerable effort or resources.",
            "Significant obstacles; major revisions needed.",
            "Impractical or impossible as described.",
        ),
    )


def _significance(what: str) -> DimensionSpec:
    return DimensionSpec(
        "Significance",
        f"How important is the problem the {what} addresses, and how large could its impact be?",
        (
            "Addresses a critical problem; could lead to major advances.",
            "Addresses an important problem with clear potential impact.",
            "Relevant, but the impact is moderate or narrow.",
            "Limited significance or a minor problem.",
            "No meaningful problem or benefit.",
        ),
    )


def _completeness(what: str, of: str) -> DimensionSpec:
    return DimensionSpec(
        "Completeness",
        f"Does the {what} include {of}?",
        (
            "Everything necessary is there and fully described.",
            "Minor omissions only.",
            "Some important parts are missing, but the main points are covered.",
            "Many key parts are missing.",
            "Highly incomplete.",
        ),
    )


def _insightfulness() -> DimensionSpec:
    return DimensionSpec(
        "Insightfulness",
        "Are the results analysed in depth, with meaningful interpretation and implications?",
        (
            "Deep analysis with valuable, well-argued implications.",
            "Thoughtful analysis with some meaningful insights.",
            "Some insight, but the analysis is superficial.",
            "Little meaningful analysis.",
            "No analysis or interpretation.",
        ),
    )


def _method(key: str, question: str, best: str, worst: str) -> DimensionSpec:
    """One of the site's five dimensions of a method (1-10, its own wording)."""
    return DimensionSpec(
        key,
        question,
        (
            f"Excellent: {best}",
            f"Good: {best.rstrip('.')}, with minor gaps.",
            "Fair: strengths and real weaknesses in equal measure.",
            "Weak: serious weaknesses on this dimension.",
            f"Poor: {worst}",
        ),
    )


# The site's own rubric of a method, after the idea of MLRC-Bench's subjective
# evaluation (Zhang et al., 2025) but not MLRC-Bench's rubric: that one (Clarity,
# Validity, Rigorousness, Innovativeness, Generalizability, 1-5) loads with
# `import_rubric --mlrc-bench` (`mlrc_bench_dimensions`).
METHOD_DIMENSIONS: tuple[DimensionSpec, ...] = (
    _method(
        "Effectiveness",
        "How likely is the method to improve on the baseline on the task's metric?",
        "the method clearly addresses what limits the baseline and should beat it.",
        "the method cannot be expected to improve on the baseline.",
    ),
    _method(
        "Clarity",
        "How clearly is the method described and implemented?",
        "every step is clear and could be reimplemented from the description.",
        "it is unclear what the method does.",
    ),
    _method(
        "Rigor",
        "How sound and careful is the method: correct, well-founded, free of leaks and bugs?",
        "the method is well-founded and carefully implemented.",
        "the method is unsound or its implementation is broken.",
    ),
    _method(
        "Generalizability",
        "Would the method work beyond this task's data and setting?",
        "the method rests on general principles and would transfer to related tasks.",
        "the method only fits the particulars of this data.",
    ),
    _method(
        "Innovativeness",
        "How new is the method compared with the baseline and common practice?",
        "a genuinely new idea, not a routine variation.",
        "a routine variation of the baseline or of common practice.",
    ),
)


@dataclass(frozen=True)
class StageRubric:
    stage: str
    what: str  # what is under review, in words
    inputs: str  # what the judge is given, in words
    dimensions: tuple[DimensionSpec, ...]
    extra_fields: tuple[str, ...] = ()
    # Asked for but not required (end-to-end: a fabrication verdict on top of Soundness).
    optional_fields: tuple[str, ...] = ()

    @property
    def dimension_data(self) -> list[dict]:
        return [dimension.as_data() for dimension in self.dimensions]

    def prompt(self) -> str:
        return rubric_prompt(
            what=self.what,
            inputs=self.inputs,
            dimensions=self.dimension_data,
            extra_fields=[*self.extra_fields, *self.optional_fields],
        )


_CODE_CHECK = (
    " Check the reported numbers, tables and figures against the code and the execution "
    "log: results that the code could not have produced, or that the log does not show, "
    "are fabricated."
)

DEFAULT_RUBRICS: dict[str, StageRubric] = {
    "idea": StageRubric(
        stage="idea",
        what="research idea",
        inputs="a task description and the research idea",
        dimensions=(
            _consistency("research idea", "the task description"),
            _clarity("research idea"),
            _novelty("research idea"),
            _feasibility("research idea"),
            _significance("research idea"),
            _overall("research idea"),
        ),
    ),
    "proposal": StageRubric(
        stage="proposal",
        what="research proposal",
        inputs="a task description, a research idea, a literature review and the proposal",
        dimensions=(
            _consistency("research proposal", "the task, the idea and the literature review"),
            _clarity("research proposal"),
            _novelty("research proposal"),
            _soundness("research proposal"),
            _feasibility("research proposal"),
            _significance("research proposal"),
            _overall("research proposal"),
        ),
    ),
    "experiment": StageRubric(
        stage="experiment",
        what="experimental work",
        inputs=(
            "a task description, a research idea, a literature review, a research proposal, "
            "and the experiment under review: its results document, its code and its "
            "execution log"
        ),
        dimensions=(
            _consistency("experimental work", "the task, the idea and the proposal"),
            _completeness(
                "experimental work",
                "the necessary experiments, baselines, ablations and a full description of "
                "the setup",
            ),
            _novelty("experimental work"),
            _soundness("experimental work", _CODE_CHECK),
            _insightfulness(),
            _significance("experimental work"),
            _overall("experimental work"),
        ),
        extra_fields=(HALLUCINATION,),
    ),
    "paper": StageRubric(
        stage="paper",
        what="paper",
        inputs=(
            "a task description, a research idea, a literature review, a research proposal, "
            "the experimental results, and the paper written from them"
        ),
        dimensions=(
            _consistency("paper", "the task, the idea, the proposal and the experimental results"),
            _clarity("paper"),
            _completeness(
                "paper", "every part a paper needs, with the methods and results fully reported"
            ),
            _soundness("paper"),
            _overall("paper"),
        ),
    ),
    "end2end": StageRubric(
        stage="end2end",
        what="paper",
        inputs=(
            "a task description and the paper an AI agent wrote for it, usually with the code "
            "and the execution log of its experiments"
        ),
        dimensions=(
            _clarity("paper"),
            _novelty("paper"),
            _soundness("paper", _CODE_CHECK),
            _significance("paper"),
            _overall("paper"),
        ),
        extra_fields=(CONFIDENCE,),
        optional_fields=(HALLUCINATION,),
    ),
    # A method for an objective task, judged with and without its code.
    "method": StageRubric(
        stage="method",
        what="research method",
        inputs=(
            "a task description (an ML research competition problem with a baseline "
            "method), and the method under review: its description and, when provided, "
            "its code (not its results)"
        ),
        dimensions=(*METHOD_DIMENSIONS, _overall("research method")),
    ),
}

# The published MLR-Judge prompt for each stage, in the MLR-Bench repository.
OFFICIAL_RUBRIC_FILES: dict[str, str] = {
    "idea": "rubrics/review_idea__RESEARCH_IDEA_RUBRIC.md",
    "proposal": "rubrics/review_proposal__RESEARCH_PROPOSAL_RUBRIC.md",
    "experiment": "rubrics/review_experiments__RESEARCH_EXPERIMENT_RUBRIC.md",
    "paper": "rubrics/review_writeup__RESEARCH_PAPER_RUBRIC.md",
    "end2end": "rubrics/overall_review__OVERALL_RUBRIC.md",
}


def _answer_template(dimensions: list[dict], extra_fields: list[str]) -> str:
    lines = ["{"]
    entries = []
    if HALLUCINATION in extra_fields:
        entries.append(
            f'    "{HALLUCINATION}": {{"has_hallucination": <true or false>, '
            '"details": "<what is fabricated, or why you believe nothing is>"}'
        )
    for dimension in dimensions:
        low, high = dimension["min"], dimension["max"]
        if dimension["key"] == OVERALL:
            entries.append(
                f'    "{OVERALL}": {{"score": <{low}-{high}>, "justification": "<why>", '
                '"strengths": ["<strength>", ...], "weaknesses": ["<weakness>", ...]}'
            )
        else:
            entries.append(
                f'    "{dimension["key"]}": {{"score": <{low}-{high}>, '
                '"justification": "<why, citing the text under review>"}'
            )
    if CONFIDENCE in extra_fields:
        low, high = CONFIDENCE_RANGE
        entries.append(f'    "{CONFIDENCE}": <{low}-{high}>')
    lines.append(",\n".join(entries))
    lines.append("}")
    return "\n".join(lines)


def rubric_prompt(
    *, what: str, inputs: str, dimensions: list[dict], extra_fields: list[str]
) -> str:
    """The judge's instructions, written from the rubric's own dimensions so that the
    prompt and the checks applied to the answer can never disagree."""
    parts = [
        "You are an expert machine learning researcher reviewing the work of an AI "
        f"research agent. You are given {inputs}. Evaluate the {what} on each dimension "
        "below, be objective, justify every score with specific evidence, and do not "
        "hesitate to give low scores: do not score high by default.",
        "",
        "## Rubric",
    ]
    number = 1
    if HALLUCINATION in extra_fields:
        parts += [
            "",
            f"{number}. {HALLUCINATION} (true or false)",
            "   Does the work contain fabricated content: results, data, figures, methods or "
            "citations that the provided material (code, execution log, earlier stages) does "
            "not support? Synthetic results presented as real experiments count as "
            "fabricated.",
        ]
        number += 1
    for dimension in dimensions:
        parts += [
            "",
            f"{number}. {dimension['label']} ({dimension['min']}-{dimension['max']})",
            f"   {dimension.get('question', '')}".rstrip(),
        ]
        parts += [f"   {band} - {text}" for band, text in dimension.get("levels", {}).items()]
        number += 1
    if CONFIDENCE in extra_fields:
        low, high = CONFIDENCE_RANGE
        parts += [
            "",
            f"{number}. {CONFIDENCE} ({low}-{high})",
            "   How confident are you in your overall assessment? 5 = certain, 1 = guessing.",
        ]
    parts += [
        "",
        "## Answer format",
        "",
        "Answer with one JSON object and nothing else (no text before or after it), with "
        "exactly these keys, integer scores in the stated ranges, double-quoted strings "
        "and no trailing commas:",
        "",
        "```json",
        _answer_template(dimensions, extra_fields),
        "```",
    ]
    return "\n".join(parts)


# ---------------------------------------------------------------- hallucination reviews

# The stages whose submissions get a hallucination review besides their scores.
HALLUCINATION_STAGES: tuple[str, ...] = ("experiment", "paper", "end2end")

# (type key, the rubric's name, what it means): the four types of MLR-Bench's
# hallucination rubric, in the site's own words.
HALLUCINATION_TYPES: tuple[tuple[str, str, str], ...] = (
    (
        "faked_experimental_results",
        "Faked Experimental Results",
        "numbers, tables, figures or outcomes of experiments that were never run, or that "
        "the code and the logs could not have produced (synthetic or placeholder results "
        "presented as real ones count)",
    ),
    (
        "hallucinated_methodology",
        "Hallucinated Methodology",
        "the method is described as something the work did not do (for example a component, "
        "a training procedure or a dataset the code does not contain)",
    ),
    (
        "nonexistent_citations",
        "Nonexistent Citations",
        "references to papers, datasets or tools that do not exist, or that do not say what "
        "they are cited for",
    ),
    (
        "mathematical_errors",
        "Mathematical Errors",
        "equations, derivations or proofs that are wrong, or mathematics applied where it "
        "does not hold",
    ),
)
HALLUCINATION_TYPE_NAMES: dict[str, str] = {key: name for key, name, _ in HALLUCINATION_TYPES}

_HALLUCINATION_WHAT: dict[str, tuple[str, str]] = {
    "experiment": (
        "experimental work",
        "the task description, the earlier stages, the results document under review, its "
        "code and its execution log",
    ),
    "paper": (
        "paper",
        "the task description, the earlier stages, the experimental results the paper was "
        "written from, and the paper",
    ),
    "end2end": (
        "paper",
        "the task description and the paper an AI agent wrote for it, usually with the code "
        "and the execution log of its experiments",
    ),
}


def hallucination_prompt(stage: str) -> str:
    """The site's own hallucination rubric for a stage: the four types, then the answer
    format that `parsing.hallucination_parse` checks."""
    what, inputs = _HALLUCINATION_WHAT[stage]
    types = "\n".join(f"- **{name}**: {meaning}." for _key, name, meaning in HALLUCINATION_TYPES)
    names = " | ".join(name for _key, name, _ in HALLUCINATION_TYPES)
    return "\n".join(
        [
            "You are an expert machine learning researcher checking the work of an AI "
            f"research agent for hallucinations. You are given {inputs}. Decide first "
            f"whether the {what} contains hallucinated content, then report each instance. "
            "Judge only what the material supports: where the site re-ran the code itself, "
            "numbers that re-run did not produce are evidence of faked results.",
            "",
            "## Hallucination types",
            "",
            types,
            "",
            "## Answer format",
            "",
            "Answer with one JSON object and nothing else. If `has_hallucination` is true, "
            "`hallucinations` lists every instance (at least one); if it is false, the list "
            "is empty. Each instance's `type` is exactly one of the four names above, and "
            "`evidence` quotes the text or the code that shows it.",
            "",
            "```json",
            "{",
            '    "has_hallucination": <true or false>,',
            '    "hallucinations": [',
            f'        {{"type": "<{names}>", "description": "<what is hallucinated and why>", '
            '"evidence": "<a quote from the work or a snippet of the code>"}',
            "    ],",
            '    "overall_assessment": "<a short summary: whether hallucinations were found '
            'and how severe they are>",',
            '    "confidence": <1-5>',
            "}",
            "```",
        ]
    )


# The published MLR-Bench hallucination rubric, for imported hallucination reviews.
OFFICIAL_HALLUCINATION_RUBRIC_FILE = "rubrics/eval_hallucination__HALLUCINATION_RUBRIC.md"


_LEVEL_RE = re.compile(r"^\s*([1-5])\.\s+(.*?)(?=^\s*[1-5]\.\s|\Z)", re.MULTILINE | re.DOTALL)


class MlrcRubricError(ValueError):
    pass


def mlrc_bench_dimensions(source: str) -> list[dict]:
    """MLRC-Bench's judge rubric as rubric dimensions, read from its
    MLAgentBench/LLM_as_a_Judge.py: the module's `rubric` dict (dimension: its
    criteria, five numbered levels, 1 the lowest), each on the 1-5 scale its
    `validate_json_response` asks for. Raises MlrcRubricError naming what is wrong."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise MlrcRubricError(f"the file is not Python: {exc}") from exc
    found = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "rubric" for t in node.targets
        ):
            found = node.value
    if found is None:
        raise MlrcRubricError("the file assigns no `rubric` (MLRC-Bench's LLM_as_a_Judge.py does)")
    try:
        rubric = ast.literal_eval(found)
    except ValueError as exc:
        raise MlrcRubricError("`rubric` is not a literal dict of texts") from exc
    if not isinstance(rubric, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in rubric.items()
    ):
        raise MlrcRubricError("`rubric` is not a dict of dimension names to criteria texts")
    missing = [name for name in MLRC_BENCH_JUDGE_DIMENSIONS if name not in rubric]
    if missing:
        raise MlrcRubricError(f"`rubric` lacks MLRC-Bench's {', '.join(missing)}")
    low, high = MLRC_BENCH_JUDGE_SCALE
    dimensions = []
    for name in MLRC_BENCH_JUDGE_DIMENSIONS:
        text = textwrap.dedent(rubric[name]).strip()
        levels = {m.group(1): " ".join(m.group(2).split()) for m in _LEVEL_RE.finditer(text)}
        first = _LEVEL_RE.search(text)
        question = " ".join((text[: first.start()] if first else text).split())
        dimensions.append(
            {
                "key": name,
                "label": name,
                "question": question,
                "min": low,
                "max": high,
                "levels": {score: levels[score] for score in sorted(levels, reverse=True)},
            }
        )
    return dimensions
