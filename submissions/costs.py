"""What a run cost: the LLM steps from `<step>_token_usage.json`, priced in the
site's one order (`common.prices.tokens_price`: the organisers' prices, then the
site's price table, `submissions.prices`, then litellm's own model price table),
and the coding agent's own figures from its trace (`claude_output.json`: the last
message has `cost_usd` and `duration_ms`).

Each step is priced at the model that ran it, as MLR-Bench's own
`performance_cost.py` counts a run: a `model` named in the usage file wins;
else the step's model (`STEP_MODELS`: the literature review `lit` ran on
OpenAI's search model, `gpt-4o-search-preview-2025-03-11`); else the agent's
base model (idea, proposal, paper and any other LLM step). Every priced step
says where its price comes from (`price_source`).

A model no table knows gives an unknown cost (None), never 0: a benchmark
that prices an unknown model at zero makes that agent look cheap. A total
with unknown steps is the sum of the known ones and says how many are not.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.db.models.fields.files import FieldFile

from common.llm import litellm_table_cost
from common.prices import Price, tokens_price
from common.results import results_changed
from common.storage import storage_errors

from .models import ArtifactKind, Stage, Submission
from .prices import SHIPPED_PRICES

# The model a step of MLR-Agent ran on when it is not the agent's own, as
# MLR-Bench's performance_cost.py assigns it (`lit_model_name`).
STEP_MODELS = {"lit": "gpt-4o-search-preview-2025-03-11"}

# Large traces are not worth parsing for two numbers at the end.
MAX_TRACE_BYTES = 64 * 1024 * 1024
MAX_USAGE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class StepCost:
    step: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    cost_usd: Decimal | None  # None: litellm does not know the model's price
    # Where the price comes from: litellm's table, or a price table entry's source.
    price_source: str = ""

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_creation_tokens
        )


def step_json(step: StepCost) -> dict[str, object]:
    """A priced step as stored on its submission (`Submission.llm_steps`)."""
    return {
        "step": step.step,
        "model": step.model,
        "input_tokens": step.input_tokens,
        "output_tokens": step.output_tokens,
        "cache_read_tokens": step.cache_read_tokens,
        "cache_creation_tokens": step.cache_creation_tokens,
        "cost_usd": None if step.cost_usd is None else str(step.cost_usd),
        "price_source": step.price_source,
    }


def step_from_json(data: dict) -> StepCost:
    cost = data.get("cost_usd")
    return StepCost(
        step=str(data["step"]),
        model=str(data["model"]),
        input_tokens=int(data["input_tokens"]),
        output_tokens=int(data["output_tokens"]),
        cache_read_tokens=int(data["cache_read_tokens"]),
        cache_creation_tokens=int(data["cache_creation_tokens"]),
        cost_usd=None if cost is None else Decimal(cost),
        price_source=str(data.get("price_source", "")),
    )


@dataclass(frozen=True)
class TraceSummary:
    cost_usd: Decimal | None
    duration_seconds: float | None


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return 0
    return int(value)


def token_usage_read(source: Path | FieldFile) -> dict | None:
    """The usage record in a token-usage file (a local file or a stored
    artifact's), or None when it is not one."""
    try:
        with source.open("rb") as handle:
            raw = handle.read(MAX_USAGE_BYTES + 1)
        if len(raw) > MAX_USAGE_BYTES:
            return None
        data = json.loads(raw.decode("utf-8"))
    except storage_errors():
        return None
    except (ValueError, RecursionError):  # not UTF-8, not JSON, nested too deep
        return None
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("usage"), dict):
        data = {**data["usage"], "model": data.get("model", data["usage"].get("model"))}
    keys = {"input_tokens", "output_tokens", "prompt_tokens", "completion_tokens"}
    return data if keys & data.keys() else None


def price_table() -> tuple[Price, ...]:
    """The organisers' prices (from the admin), then the shipped table."""
    from benchmark.models import ModelPrice

    own = tuple(
        Price(
            p.model,
            p.input_usd_per_mtok,
            p.output_usd_per_mtok,
            p.cache_write_usd_per_mtok,
            p.cache_read_usd_per_mtok,
            p.source,
            p.as_of,
            match_dated=p.match_dated,
        )
        for p in ModelPrice.objects.all()
    )
    return own + SHIPPED_PRICES


def step_cost(
    *, step: str, usage: dict, default_model: str, prices: tuple[Price, ...] = SHIPPED_PRICES
) -> StepCost:
    """Price one step. Two usage formats occur: Anthropic's (`input_tokens`,
    `output_tokens`, cache counts kept apart) and OpenAI's (`prompt_tokens`,
    `completion_tokens`). The model: the file's, else the step's (`STEP_MODELS`),
    else the agent's."""
    model = str(usage.get("model") or STEP_MODELS.get(step) or default_model or "")
    if "input_tokens" in usage or "output_tokens" in usage:
        inputs, outputs = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
    else:
        inputs, outputs = _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))
    cache_read = _int(usage.get("cache_read_input_tokens"))
    cache_creation = _int(usage.get("cache_creation_input_tokens"))
    priced = tokens_price(
        model=model,
        input_tokens=inputs,
        output_tokens=outputs,
        cache_read_tokens=cache_read,
        cache_creation_tokens=cache_creation,
        prices=prices,
        litellm=lambda: litellm_table_cost(model, inputs, outputs, cache_read, cache_creation),
    )
    return StepCost(
        step=step,
        model=model,
        input_tokens=inputs,
        output_tokens=outputs,
        cache_read_tokens=cache_read,
        cache_creation_tokens=cache_creation,
        cost_usd=priced.cost_usd,
        price_source=priced.source,
    )


def steps_cost(
    files: Sequence[tuple[str, Path | FieldFile]],
    *,
    default_model: str,
    prices: tuple[Price, ...] | None = None,
) -> list[StepCost]:
    """Price every `<step>_token_usage.json` among (relative path, file);
    `prices` defaults to `price_table()` (one query)."""
    if prices is None:
        prices = price_table() if files else SHIPPED_PRICES
    steps = []
    for relative, source in sorted(files, key=lambda pair: pair[0]):
        usage = token_usage_read(source)
        if usage is None:
            continue
        step = relative.rsplit("/", 1)[-1].removesuffix("_token_usage.json")
        steps.append(step_cost(step=step, usage=usage, default_model=default_model, prices=prices))
    return steps


# Stages whose run includes a coding agent's work (the code and its execution).
CODING_STAGES = frozenset({Stage.EXPERIMENT, Stage.END2END})


def coding_cost_unknown(*, stage: str, coding_agent: str, agent_cost_usd: object) -> bool:
    """Whether the run's coding agent worked at a cost nobody recorded (Codex CLI and
    Gemini CLI leave no `claude_output.json`): the run's cost is then a lower bound,
    its coding step counted as one unpriced step."""
    return stage in CODING_STAGES and bool(coding_agent) and agent_cost_usd is None


def steps_priced_total(steps: list[StepCost]) -> tuple[Decimal | None, int]:
    """(the sum of the priced steps, None when none is; how many are unpriced)."""
    known = [step.cost_usd for step in steps if step.cost_usd is not None]
    return (sum(known, Decimal(0)) if known else None), len(steps) - len(known)


def trace_summary(path: Path) -> TraceSummary:
    """The coding agent's own cost and duration, from the last message of its trace,
    read in the parsing child under `TRACE_PARSE_MEMORY_BYTES` (as `submissions.traces`):
    a trace made to balloon costs the child, never this process."""
    from django.conf import settings

    from common.child_pool import ChildFailed, ChildTimeout, child_run

    from .trace_worker import trace_summary_budgeted

    empty = TraceSummary(cost_usd=None, duration_seconds=None)
    try:
        if path.stat().st_size > MAX_TRACE_BYTES:
            return empty
        cost, duration_ms = child_run(
            trace_summary_budgeted,
            str(path),
            settings.TRACE_PARSE_MEMORY_BYTES,
            timeout=settings.TRACE_PARSE_SECONDS + 5,
        )
    except (OSError, ChildTimeout, ChildFailed):
        return empty
    return TraceSummary(
        cost_usd=None if cost is None else Decimal(str(round(cost, 6))),
        duration_seconds=None if duration_ms is None else duration_ms / 1000,
    )


# AI Scientist v2 writes its LLM spend per model into this file at the run's root.
TOKEN_TRACKER_NAME = "token_tracker.json"  # noqa: S105 - a file name, not a secret


def token_tracker_cost(path: Path) -> Decimal | None:
    """`cost (USD)` summed over the models of an AI Scientist v2 `token_tracker.json`;
    None when the file is not one or a model's cost is missing (unknown, never 0)."""
    try:
        if path.stat().st_size > MAX_USAGE_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(data, dict) or not data:
        return None
    total = Decimal(0)
    for entry in data.values():
        cost = entry.get("cost (USD)") if isinstance(entry, dict) else None
        if isinstance(cost, bool) or not isinstance(cost, int | float) or cost < 0:
            return None
        total += Decimal(str(cost))
    return total.quantize(Decimal("0.000001"))


def submission_steps_price(
    submission: Submission, *, prices: tuple[Price, ...] | None = None
) -> list[StepCost]:
    """Price the submission's LLM steps from its stored token-usage files."""
    usage = [
        (a.path, a.file) for a in submission.artifacts.all() if a.kind == ArtifactKind.TOKEN_USAGE
    ]
    return steps_cost(usage, default_model=submission.agent.base_model, prices=prices)


def submission_steps(submission: Submission) -> list[StepCost]:
    """The submission's priced LLM steps, as stored at intake. A row from before
    they were stored is priced once from its files and the result stored."""
    if submission.llm_steps is not None:
        return [step_from_json(item) for item in submission.llm_steps]
    steps = submission_steps_price(submission)
    submission.llm_steps = [step_json(step) for step in steps]
    # An update, not save(): the totals are unchanged, so nothing public changes.
    Submission.objects.filter(pk=submission.pk).update(llm_steps=submission.llm_steps)
    return steps


def submissions_reprice() -> int:
    """Price again the LLM steps of every submission with an unpriced step,
    with the current tables (after organisers add a price); returns how many
    changed. Reads each one's token-usage files from the store."""
    prices = price_table()
    changed = 0
    pending = Submission.objects.filter(llm_unpriced_steps__gt=0).select_related("agent")
    for submission in pending.prefetch_related("artifacts"):
        steps = submission_steps_price(submission, prices=prices)
        total, unpriced = steps_priced_total(steps)
        if (total, unpriced) != (submission.llm_cost_usd, submission.llm_unpriced_steps):
            submission.llm_cost_usd, submission.llm_unpriced_steps = total, unpriced
            submission.llm_steps = [step_json(step) for step in steps]
            submission.save(update_fields=["llm_cost_usd", "llm_unpriced_steps", "llm_steps"])
            results_changed([submission.stage])  # the boards' cost columns
            changed += 1
    return changed
