"""A judge calls its model through the site's LLM gateway (common/llm.py): its
row is the gateway's configuration."""

from __future__ import annotations

from typing import Any

from common.llm import LLMResponse, ModelConfig
from common.llm import chat as gateway_chat

from .models import Judge


def judge_model_config(judge: Judge) -> ModelConfig:
    return ModelConfig(
        model=judge.model,
        caller=f"judge {judge.name}",
        api_base=judge.api_base,
        api_key_env=judge.api_key_env,
        timeout_seconds=judge.timeout_seconds,
        temperature=judge.temperature,
        max_tokens=judge.max_tokens,
        own_price=judge.own_price,
    )


def chat(
    *, judge: Judge, messages: list[dict[str, Any]], timeout: float | None = None
) -> LLMResponse:
    """One chat completion with the judge's model and parameters."""
    return gateway_chat(config=judge_model_config(judge), messages=messages, timeout=timeout)
