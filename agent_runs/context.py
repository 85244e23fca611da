"""What a running stage works with: the run's row, its workspace and trace, and
the one way it calls a model (through the site's LLM gateway), which keeps the
run's tokens and cost so far, its caps, and cancellation."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import F

from common import llm as gateway

from .models import AgentRun, AgentRunStage
from .workspace import Trace, json_write, now_iso


class StageFailed(Exception):
    """The stage cannot finish; the message says why (shown on the run's page)."""


class RunCancelled(Exception):
    """An organiser cancelled the run while this stage ran."""


class BudgetSpent(Exception):
    """The run's token or cost cap is reached; `reason` is `max_tokens` or `max_cost`."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


@dataclass
class StageUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""

    def record(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


@dataclass
class StageContext:
    run: AgentRun
    stage: AgentRunStage
    workspace: Path
    trace: Trace
    usage: StageUsage = field(default_factory=StageUsage)

    def config(self, model: str) -> gateway.ModelConfig:
        # The gateway checks the key and the address policy again before each call
        # (the settings may have changed since the run was created).
        return gateway.ModelConfig(
            model=model,
            caller=f"agent run {self.run.pk}",
            api_base=self.run.api_base,
            api_key_env=self.run.api_key_env,
            timeout_seconds=settings.AGENT_RUN_CALL_TIMEOUT_SECONDS,
        )

    def cancel_check(self) -> None:
        if AgentRun.objects.filter(pk=self.run.pk, cancel_requested=True).exists():
            raise RunCancelled(f"cancelled during the {self.stage.get_name_display()} stage")

    def budget_check(self) -> None:
        """Raise BudgetSpent when the run has used its token or cost cap."""
        self.run.refresh_from_db(fields=["tokens", "cost_usd"])
        run = self.run
        if run.max_tokens is not None and run.tokens >= run.max_tokens:
            raise BudgetSpent(
                "max_tokens", f"the token cap ({run.max_tokens}) is reached ({run.tokens} used)"
            )
        if run.max_cost_usd is not None and run.cost_usd >= run.max_cost_usd:
            raise BudgetSpent(
                "max_cost",
                f"the cost cap (${run.max_cost_usd}) is reached (${run.cost_usd:.4f} spent)",
            )

    def call(
        self,
        *,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
    ) -> gateway.LLMResponse:
        """One model call, transient errors retried with backoff; its tokens and cost
        are added to the stage and the run at once (the cost so far is live)."""
        self.cancel_check()
        self.budget_check()
        config = self.config(model)
        # The gateway's one retry policy (settings LLM_RETRY_*), as for the judges.
        # This loop used its own until then: 3 attempts, 1 s then 2 s apart, a
        # Retry-After taken as the wait up to 30 s. The judges' policy won (5
        # attempts, 2 s doubling up to 60 s, with jitter, a Retry-After as the
        # least wait): a stage runs for minutes and failing it costs the whole
        # stage's work, while 3 s of retrying gives up inside one provider's rate
        # window (a 429 without Retry-After) or a brief 5xx outage, which ~30 s
        # of backoff rides out; jitter keeps parallel runs from retrying together.
        try:
            response = gateway.call_with_retries(
                lambda: gateway.chat(config=config, messages=messages, tools=tools)
            )
        except gateway.RetriesExhausted as exc:
            raise StageFailed(f"the model call failed {exc.attempts} times: {exc.last}") from exc
        except gateway.PermanentLLMError as exc:
            raise StageFailed(str(exc)) from exc
        self._account(response)
        return response

    def _account(self, response: gateway.LLMResponse) -> None:
        prompt, completion = response.input_tokens or 0, response.output_tokens or 0
        self.usage.prompt_tokens += prompt
        self.usage.completion_tokens += completion
        self.usage.model = self.usage.model or response.model
        cost = response.cost_usd if response.cost_usd is not None else Decimal(0)
        AgentRunStage.objects.filter(pk=self.stage.pk).update(
            tokens=F("tokens") + prompt + completion, cost_usd=F("cost_usd") + cost
        )
        AgentRun.objects.filter(pk=self.run.pk).update(
            tokens=F("tokens") + prompt + completion,
            cost_usd=F("cost_usd") + cost,
            unpriced_calls=F("unpriced_calls") + (1 if response.cost_usd is None else 0),
        )

    def record(
        self,
        response: gateway.LLMResponse,
        *,
        started_at: str,
        duration_s: float,
        tool_results: list[dict[str, Any]] | None = None,
        message: dict[str, Any] | None = None,
    ) -> None:
        self.trace.step(
            stage=self.stage.name,
            started_at=started_at,
            duration_s=duration_s,
            message=message or response.assistant_message(),
            tool_results=tool_results or [],
            usage={
                "prompt_tokens": response.input_tokens or 0,
                "completion_tokens": response.output_tokens or 0,
            },
            cost_usd=float(response.cost_usd) if response.cost_usd is not None else None,
        )

    def ask(self, *, model: str, messages: list[dict[str, Any]]) -> str:
        """A plain LLM stage's one call: the answer's text, recorded in the trace."""
        started_at, started = now_iso(), time.monotonic()
        response = self.call(model=model, messages=messages)
        self.record(response, started_at=started_at, duration_s=time.monotonic() - started)
        if not response.text.strip():
            raise StageFailed(f"{model} answered with no text")
        return response.text

    def usage_write(self) -> None:
        """`<step>_token_usage.json` in MLR-Bench's format, for this stage's calls."""
        if self.usage.model:
            json_write(self.workspace / f"{self.stage.name}_token_usage.json", self.usage.record())
