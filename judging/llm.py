"""A judge calls its model through the site's LLM gateway (common/llm.py): its
row is the gateway's configuration."""

from __future__ import annotations

import base64
import functools
from typing import Any

from common.llm import LLMResponse, ModelConfig, supports_pdf_input
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


# Providers whose chat models take a PDF as message content (litellm passes it as a
# document to Claude and as inline data to Gemini); their price table does not
# always say so.
_PDF_PROVIDERS = ("anthropic/", "gemini/", "vertex_ai/")


@functools.cache
def _model_reads_pdf(model: str) -> bool:
    return model.startswith(_PDF_PROVIDERS) or supports_pdf_input(model)


def reads_pdf(judge: Judge) -> bool:
    """Whether the judge is sent a PDF paper itself, besides its extracted text. A
    judge behind its own `api_base` (an OpenAI-compatible server) reads text only."""
    return not judge.api_base and _model_reads_pdf(judge.model)


def pdf_content_part(data: bytes) -> dict[str, Any]:
    """A PDF as a message content part in the form litellm maps to each provider."""
    encoded = base64.b64encode(data).decode("ascii")
    return {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{encoded}"}}
