"""Fabrication: the rules that combine the judges' flags, the experts' `Not Sure`,
the detection metrics on hand-made cases, and the sample data through the
importer: Claude Code's experiment rate under `any` and `majority` as the
published reviews give it, and the experts' per-type rates end to end."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from common.proportions import binary_agreement
from common.stats import wilson_interval
from judging.selectors import JudgeVerdict
from leaderboard.selectors.fabrication import (
    human_flags,
    judges_flags,
    reproduction_flags,
    rule_combine,
)

TASK = "iclr2025_bi_align"
TYPES = (
    "faked_experimental_results",
    "hallucinated_methodology",
    "nonexistent_citations",
    "mathematical_errors",
)


@pytest.mark.parametrize(
    ("flags", "any_", "majority", "all_"),
    [
        ([True, False], True, False, False),  # two judges, one flags: the paper's 80% vs 10%
        ([True, True], True, True, True),
        ([False, False], False, False, False),
        ([True, True, False], True, True, False),
        ([True], True, True, True),
        ([], None, None, None),  # no verdict: not counted at all
    ],
)
def test_each_rule_combines_the_judges_flags(flags, any_, majority, all_):
    assert rule_combine(flags, "any") is any_
    assert rule_combine(flags, "majority") is majority
    assert rule_combine(flags, "all") is all_


def test_a_judge_without_a_hallucination_review_says_nothing_about_types():
    untyped = JudgeVerdict(judge="a", any=True, typed=False)
    typed = JudgeVerdict(judge="b", any=True, typed=True, types={"mathematical_errors"})

    flags = judges_flags([untyped, typed], "all")

    assert flags["any"] is True
    # Only judge b reviewed the types: "all" is b's alone.
    assert flags["mathematical_errors"] is True and flags["nonexistent_citations"] is False


def test_not_sure_is_in_neither_numerator_nor_denominator_and_is_counted():
    flags, not_sure = human_flags(
        {
            "faked_experimental_results": ["yes"],
            "hallucinated_methodology": ["not_sure"],
            "nonexistent_citations": ["no", "not_sure"],
            "mathematical_errors": ["not_sure", "yes"],
        }
    )
    assert flags == {
        "faked_experimental_results": True,
        "hallucinated_methodology": None,
        "nonexistent_citations": False,
        "mathematical_errors": True,
        "any": True,
    }
    assert not_sure == {
        "faked_experimental_results": 0,
        "hallucinated_methodology": 1,
        "nonexistent_citations": 1,
        "mathematical_errors": 1,
    }
    only_not_sure, _ = human_flags(dict.fromkeys(TYPES, ["not_sure"]))
    assert only_not_sure["any"] is None


def test_the_reproduction_check_flags_faked_results_only():
    assert reproduction_flags("not_reproduced")["faked_experimental_results"] is True
    assert reproduction_flags("not_reproduced")["any"] is True
    assert reproduction_flags("not_reproduced")["mathematical_errors"] is None
    assert reproduction_flags("reproduced")["any"] is False
    assert reproduction_flags("could_not_run")["any"] is None


def test_detection_metrics_on_a_hand_made_case():
    # 10 papers: the judge flags 5, the experts 4; they agree on 3 flagged, 4 clean.
    pairs = [(True, True)] * 3 + [(True, False)] * 2 + [(False, True)] + [(False, False)] * 4
    agreement = binary_agreement(pairs)
    assert (agreement.n, agreement.true_positive, agreement.false_positive) == (10, 3, 2)
    assert agreement.precision == pytest.approx(3 / 5)
    assert agreement.recall == pytest.approx(3 / 4)
    assert agreement.f1 == pytest.approx(2 * 0.6 * 0.75 / 1.35)
    # po = 0.7, pe = 0.5 * 0.4 + 0.5 * 0.6 = 0.5 -> kappa = 0.4
    assert agreement.kappa == pytest.approx(0.4)


def test_detection_metrics_are_undefined_where_they_must_be():
    never_flags = binary_agreement([(False, True), (False, False)])
    assert never_flags.precision is None and never_flags.recall == 0.0
    constant = binary_agreement([(True, True), (True, True)])
    assert constant.precision == 1.0 and constant.kappa is None  # chance agreement is total
    assert binary_agreement([]).kappa is None


def test_wilson_intervals():
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and 0 < high < 0.31
    assert wilson_interval(0, 0) is None


@pytest.fixture
def imported(db, sample):
    """The published sample, imported (once per session: tests/conftest.py)."""
    return sample


def experiment_flags(mlrbench_data, agent: str) -> list[bool]:
    """The published experiment reviews' verdicts on an agent's run, one per judge."""
    return [
        json.loads(path.read_text())["Hallucination"]["has_hallucination"]
        for path in sorted(
            mlrbench_data.glob(f"agent_reviews/subset_reviews_*/{TASK}/experiments/{agent}.json")
        )
    ]


def row(data: dict, agent: str, source: str) -> dict:
    return next(r for r in data["rows"] if r["agent"] == agent and r["source"] == source)


def test_claude_codes_rate_under_any_and_majority_as_the_published_reviews_give_it(
    client, imported, mlrbench_data
):
    flags = experiment_flags(mlrbench_data, "claude")
    assert len(flags) == 2

    any_rule = client.get("/api/fabrication/?stage=experiment&rule=any").json()
    majority = client.get("/api/fabrication/?stage=experiment&rule=majority").json()

    assert set(any_rule) == {"stage", "rule", "types", "rows", "detection", "canary_recall"}
    assert any_rule["types"] == list(TYPES)
    claude_any = row(any_rule, "claude", "judges")
    assert set(claude_any) == {"agent", "source", "n_tasks", "flagged", "rate", "by_type"}
    assert claude_any["n_tasks"] == 1
    assert claude_any["flagged"] == int(any(flags))
    assert row(majority, "claude", "judges")["flagged"] == int(2 * sum(flags) > len(flags))
    # On the sample one judge flags Claude Code's run and the other does not: 100% vs 0%.
    assert (claude_any["rate"], row(majority, "claude", "judges")["rate"]) == (1.0, 0.0)
    # Each judge alone, named by the source.
    per_judge = {r["source"]: r["flagged"] for r in any_rule["rows"] if r["agent"] == "claude"}
    assert sorted(v for k, v in per_judge.items() if k.startswith("judge:")) == sorted(
        int(f) for f in flags
    )
    # The leaderboard's experiment tab says the same under each rule.
    board = client.get("/api/leaderboard/?stage=experiment").json()
    claude = next(r for r in board["rows"] if r["agent"] == "claude")
    assert (claude["fabrication_rate"], claude["fabrication_rule"]) == (1.0, "any")
    board = client.get("/api/leaderboard/?stage=experiment&fabrication_rule=majority").json()
    claude = next(r for r in board["rows"] if r["agent"] == "claude")
    assert (claude["fabrication_rate"], claude["fabrication_rule"]) == (0.0, "majority")


def test_the_experts_per_type_rates_for_ai_scientist_and_mlr_agent(client, imported, mlrbench_data):
    import csv

    with (mlrbench_data / "human_eval/Hallucination Check.csv").open() as handle:
        published = {r["LLM"]: r for r in csv.DictReader(handle)}
    columns = dict(
        zip(
            TYPES,
            (
                "is_Faked_Experimental_Result",
                "is_Hallucinated_Methodology",
                "is_Incorrect_Citation",
                "is_Mathematical_Error",
            ),
            strict=True,
        )
    )

    data = client.get("/api/fabrication/?stage=end2end").json()

    for system, agent in (("AI Scientist V2", "ai-scientist-v2"), ("MLR Agent", "o4-mini")):
        human = row(data, agent, "human")
        for kind, column in columns.items():
            answer = published[system][column]
            share = human["by_type"][kind]
            if answer == "Not Sure":
                assert (share["n"], share["not_sure"]) == (0, 1)
            else:
                assert share["n"] == 1 and share["rate"] == (1.0 if answer == "Yes" else 0.0)
                assert share["ci"] and 0 <= share["ci"][0] <= share["rate"] <= share["ci"][1]
    # AI Scientist v2 is on the end2end board, from its imported reviews, with both rates.
    board = client.get("/api/leaderboard/?stage=end2end").json()
    scientist = next(r for r in board["rows"] if r["agent"] == "ai-scientist-v2")
    assert scientist["display_name"] == "AI Scientist v2 (o4-mini)"
    assert scientist["scaffold"] == "AI Scientist v2" and scientist["base_model"] == "o4-mini"
    assert scientist["cost_usd_per_task"] == pytest.approx(1.8608, abs=1e-4)
    assert scientist["fabrication_rate"] == 1.0 and scientist["human_fabrication_rate"] == 1.0
    # The judges' typed reviews of it, against the experts: n papers compared.
    detection = [
        d
        for d in data["detection"]
        if d["reference"] == "human" and d["type"] == "hallucinated_methodology" and d["n"]
    ]
    assert {d["detector"] for d in detection} >= {
        "judge:claude-3-7-sonnet-20250219",
        "judge:gemini-2.5-pro-preview",
        "judges",
    }
    assert all(d["recall"] == 1.0 for d in detection)


def published_typed_flags(mlrbench_data, run_folder: str) -> dict[str, set[str]]:
    """Each judge's typed findings in the hallucination reviews beside a run, read
    straight from the files: {judge file suffix: the types it found}."""
    from judging.parsing import hallucination_type_key

    flags = {}
    for path in sorted(mlrbench_data.glob(f"{run_folder}/review_hallucination_*.json")):
        review = json.loads(path.read_text())
        judge = path.stem.removeprefix("review_hallucination_")
        flags[judge] = {hallucination_type_key(h["type"]) for h in review["hallucinations"]}
        assert review["has_hallucination"] is bool(flags[judge])
    return flags


def test_mlr_agents_o4_mini_run_by_judges_and_by_experts(client, imported, mlrbench_data):
    import csv

    typed = published_typed_flags(mlrbench_data, f"agent_results/end2end_o4-mini/{TASK}")
    assert len(typed) == 2
    with (mlrbench_data / "human_eval/Hallucination Check.csv").open() as handle:
        expert = next(r for r in csv.DictReader(handle) if r["LLM"] == "MLR Agent")

    for rule, combine in (("any", any), ("majority", lambda v: 2 * sum(v) > len(v))):
        data = client.get(f"/api/fabrication/?stage=end2end&rule={rule}").json()
        judges = row(data, "o4-mini", "judges")
        assert judges["n_tasks"] == 1
        assert judges["flagged"] == int(combine([bool(t) for t in typed.values()]))
        for kind in TYPES:
            expected = float(combine([kind in found for found in typed.values()]))
            assert judges["by_type"][kind]["rate"] == expected, (rule, kind)
        # Each judge alone, as its file says.
        for judge, found in typed.items():
            alone = row(data, "o4-mini", f"judge:{judge.removesuffix('-05-06')}")
            assert {k for k in TYPES if alone["by_type"][k]["rate"] == 1.0} == found
    human = row(data, "o4-mini", "human")
    assert human["by_type"]["faked_experimental_results"]["rate"] == (
        1.0 if expert["is_Faked_Experimental_Result"] == "Yes" else 0.0
    )
    assert row(data, "o4-mini", "human")["flagged"] == 1
    # The run's files keep the agent's output only: the reviews are judgments.
    paths = client.get("/api/leaderboard/?stage=end2end").json()
    o4 = next(r for r in paths["rows"] if r["agent"] == "o4-mini")
    assert o4["fabrication_rate"] == 1.0 and o4["human_fabrication_rate"] == 1.0
    from submissions.models import Artifact

    assert not Artifact.objects.filter(path__startswith="review_hallucination_").exists()
    # The experts' row is o4-mini's, not Claude's.
    assert not any(r["agent"] == "claude" and r["source"] == "human" for r in data["rows"])

    # --hallucination-agent still overrides; the answers move, none is left behind.
    from reviews.models import HumanHallucinationCheck

    def experts_agents() -> set[str]:
        checks = HumanHallucinationCheck.objects.filter(imported=True)
        return set(checks.values_list("submission__agent__name", flat=True))

    out = StringIO()
    call_command(
        "import_mlrbench",
        str(mlrbench_data),
        "--hallucination-agent",
        "MLR Agent=claude",
        stdout=out,
        stderr=StringIO(),
    )
    assert experts_agents() == {"ai-scientist-v2", "claude"}
    assert "4 hallucination checks removed (no longer in the file)" in out.getvalue()
    call_command("import_mlrbench", str(mlrbench_data), stdout=StringIO(), stderr=StringIO())
    assert experts_agents() == {"ai-scientist-v2", "o4-mini"}


def test_the_fabrication_page_draws_the_chart_and_links_the_evidence(client, imported):
    html = client.get("/fabrication/?stage=end2end").content.decode()

    assert 'data-testid="fabrication-chart"' in html and "<rect" in html
    assert 'data-testid="flagged-ai-scientist-v2"' in html
    assert 'data-testid="flagged-o4-mini"' in html
    assert "/submissions/" in html and "Hallucinated Methodology" in html
    assert 'data-testid="detection-human"' in html
    assert client.get("/fabrication/?stage=idea").status_code == 400
    bad = client.get("/api/fabrication/?stage=end2end&rule=some").json()
    assert bad["errors"][0]["field"] == "rule"


def test_the_export_has_the_findings_and_the_experts_checks(client, imported):
    import io
    import zipfile

    response = client.get("/api/export/?formats=csv")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    names = archive.namelist()
    assert "hallucination_findings.csv" in names and "human_hallucination_checks.csv" in names
    checks = archive.read("human_hallucination_checks.csv").decode()
    assert checks.count("\n") == 1 + 8  # two papers, four types each
    findings = archive.read("hallucination_findings.csv").decode()
    assert "hallucinated_methodology" in findings and "ai-scientist-v2" in findings
