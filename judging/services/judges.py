"""Judges: adding one (checked with a call first if asked), and switching one on or off."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from common.errors import ValidationFailed
from common.llm import LLMResponse
from common.results import results_changed

from ..models import Judge


class JudgeError(ValidationFailed):
    pass


@dataclass(frozen=True)
class JudgeAdded:
    judge: Judge
    # The check call's answer; None when it was not checked.
    check: LLMResponse | None = None


def judge_create(
    *,
    name: str,
    model: str,
    api_base: str = "",
    api_key_env: str = "",
    model_family: str = "other",
    requests_per_minute: int = 60,
    temperature: float = 0.0,
    max_tokens: int = 4096,
    timeout_seconds: float = 120.0,
    input_usd_per_mtok: Decimal | None = None,
    output_usd_per_mtok: Decimal | None = None,
    is_active: bool = True,
    check: bool = False,
) -> JudgeAdded:
    """A new judge, in no panel (so no board's scores move). With `check`, its model
    is called once first (`judge_check`) and nothing is saved when it fails."""
    from django.core.exceptions import ValidationError

    if Judge.objects.filter(name=name).exists():
        raise JudgeError(f"a judge named {name!r} exists already")
    judge = Judge(
        name=name,
        model=model.strip(),
        api_base=api_base.strip(),
        api_key_env=api_key_env.strip(),
        model_family=model_family,
        requests_per_minute=requests_per_minute,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout_seconds=timeout_seconds,
        input_usd_per_mtok=input_usd_per_mtok,
        output_usd_per_mtok=output_usd_per_mtok,
        is_active=is_active,
    )
    try:
        judge.full_clean()
    except ValidationError as exc:
        raise JudgeError(
            "; ".join(
                " ".join(msgs) if key == "__all__" else f"{key}: {' '.join(msgs)}"
                for key, msgs in exc.message_dict.items()
            )
        ) from exc
    if timeout_seconds <= 0:
        raise JudgeError("timeout_seconds: must be positive")
    answer = judge_check(judge=judge) if check else None
    judge.save()
    results_changed(None)  # a row on every stage's judges' board
    return JudgeAdded(judge=judge, check=answer)


class JudgeCheckFailed(JudgeError):
    default_code = "judge_check_failed"


def judge_check(*, judge: Judge) -> LLMResponse:
    """One small call to the judge's model through the gateway: its answer's usage,
    or JudgeCheckFailed with the provider's reason (a bad key, no server, an
    unknown model)."""
    from common.llm import LLMError, model_check

    from ..llm import judge_model_config

    try:
        return model_check(judge_model_config(judge))
    except LLMError as exc:
        raise JudgeCheckFailed(f"judge {judge.name} ({judge.model}) did not answer: {exc}") from exc


def judge_set_active(*, name: str, active: bool) -> Judge:
    updated = Judge.objects.filter(name=name).update(is_active=active)
    if not updated:
        raise JudgeError(f"no judge named {name!r}")
    # Which submissions still await a judge (their judging state), on every stage.
    results_changed(None)
    return Judge.objects.get(name=name)
