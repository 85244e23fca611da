"""The site's LLM gateway: the one place that calls a model (litellm), for the
judges and for anything else that calls one, configured by a `ModelConfig`
(judging builds one from a judge's row).

Every call carries a timeout and `num_retries=0` (and `max_retries=0` for the
provider SDK underneath): litellm never retries on its own. Errors come out
classified: `TransientLLMError` (worth retrying: rate limits, timeouts, refused
connections, 5xx) or `PermanentLLMError` (a bad key, a context too long, a bad
request, an unknown model: retrying cannot help). Retrying is the site's one
policy, `RetryPolicy` (settings `LLM_RETRY_*`), applied by `call_with_retries`
(tenacity) around whatever a caller does per attempt (a judge takes its rate-limit turn
and watches its deadline; an agent run just calls). Usage and cost come from
the configured price when there is one, else litellm's bundled price table, in
the one order of `common.prices.tokens_price`; a model it has no price for
costs `None` (unknown), never 0.

Nothing else in the site imports litellm (tests/common/test_llm_gateway.py):
what another module needs of it (whether a model reads PDFs, which provider
routes a name) is a function here.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from types import ModuleType
from typing import Any, TypeVar, cast

from . import llm_policy
from .prices import tokens_price

logger = logging.getLogger(__name__)

# litellm (with openai and httpx under it) takes seconds to import, so it is
# imported on the first call, not when the apps load: every command, worker and
# page that never calls a model starts without it (tests/common/test_startup.py).


def _litellm() -> ModuleType:
    import litellm

    # litellm prints a help banner on every exception; our errors carry their own message.
    litellm.suppress_debug_info = True
    if litellm.client_session is None:
        # The OpenAI client under litellm follows redirects: an allowed `api_base`
        # answering 307 sent the call on to any address, past the address policy
        # (common/llm_policy.py). One client for the process, which follows none.
        import httpx

        litellm.client_session = httpx.Client(follow_redirects=False)
    return cast(ModuleType, litellm)  # an Any to mypy, which skips litellm (pyproject.toml)


class LLMError(Exception):
    """A call that did not produce an answer. `retry_after` is the server's hint in
    seconds when it gave one (429/503 `Retry-After`)."""

    transient = False

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class TransientLLMError(LLMError):
    transient = True


class PermanentLLMError(LLMError):
    transient = False


class RetriesExhausted(LLMError):
    """A call that failed transiently on every attempt the policy allows, or whose
    next wait would end past the caller's deadline (`out_of_time`). `last` is the
    last attempt's error."""

    transient = False

    def __init__(self, last: TransientLLMError, *, attempts: int, out_of_time: bool = False):
        limit = " (time limit)" if out_of_time else ""
        super().__init__(
            f"gave up after {attempts} attempts{limit}: {last}", retry_after=last.retry_after
        )
        self.last = last
        self.attempts = attempts
        self.out_of_time = out_of_time


@dataclass(frozen=True)
class ModelConfig:
    """Which model to call and how: litellm's model name, the server (`api_base`;
    empty: the provider's own), the environment variable holding the key (empty:
    litellm's provider variable), the longest a call may take, sampling
    parameters, and the price in USD per million input and output tokens when
    the caller knows it (None: litellm's table). `caller` names who calls, in
    error messages ("judge claude-judge")."""

    model: str
    caller: str
    api_base: str = ""
    api_key_env: str = ""
    timeout_seconds: float = 120.0
    temperature: float | None = None
    max_tokens: int | None = None
    own_price: tuple[Decimal, Decimal] | None = None


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; `arguments` is the model's raw JSON text
    (the caller parses it: a model may write invalid JSON)."""

    id: str
    name: str
    arguments: str

    def as_message(self) -> dict[str, Any]:
        """The call as it appears in an OpenAI assistant message."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True)
class LLMResponse:
    text: str
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: Decimal | None
    latency_seconds: float
    model: str
    tool_calls: tuple[ToolCall, ...] = ()

    def assistant_message(self) -> dict[str, Any]:
        """The answer as the assistant message to send back in the next request."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [call.as_message() for call in self.tool_calls]
        return message

    def usage_record(self) -> dict[str, Any]:
        """The call's usage in MLR-Bench's `<step>_token_usage.json` format (OpenAI's
        names, whatever the provider), with the model that answered."""
        prompt, completion = self.input_tokens or 0, self.output_tokens or 0
        return {
            "model": self.model,
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }


# What an OpenAI-compatible server that needs no key (Ollama, vLLM, llama.cpp) is
# sent: the OpenAI SDK refuses to send a request without some key.
NO_KEY_PLACEHOLDER = "no-key-needed"


def api_key_for(config: ModelConfig) -> str | None:
    """The key from the configured environment variable. Without one: for the
    provider's own server, None (litellm reads the provider's variable, e.g.
    ANTHROPIC_API_KEY); for an own `api_base`, a placeholder, so a local server
    that needs no key answers, and no provider key is sent to another server."""
    if not config.api_key_env:
        return NO_KEY_PLACEHOLDER if config.api_base else None
    key = os.environ.get(config.api_key_env)
    if not key:
        raise PermanentLLMError(
            f"the environment variable {config.api_key_env} ({config.caller}'s API key) is "
            "not set in the worker's environment"
        )
    return key


def destination_check(config: ModelConfig) -> None:
    """Raise `PermanentLLMError` when the policy refuses the configuration's key
    variable, where its key would go, or its `api_base` (common.llm_policy)."""
    problems = llm_policy.llm_destination_problems(
        models=[config.model], api_base=config.api_base, api_key_env=config.api_key_env
    )
    if problems:
        raise PermanentLLMError(
            f"{config.caller} may not call {config.model}: "
            + "; ".join(problem.message for problem in problems)
        )


def image_part(data: bytes, *, media_type: str) -> dict[str, Any]:
    """An image as an OpenAI content part (a data URL), for a model that reads figures."""
    encoded = base64.b64encode(data).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{media_type};base64,{encoded}"}}


def _tool_calls(message: Any) -> tuple[ToolCall, ...]:
    calls = []
    for index, call in enumerate(getattr(message, "tool_calls", None) or []):
        function = getattr(call, "function", None)
        arguments = getattr(function, "arguments", None)
        calls.append(
            ToolCall(
                id=str(getattr(call, "id", None) or f"call_{index}"),
                name=str(getattr(function, "name", None) or ""),
                arguments=arguments if isinstance(arguments, str) else json.dumps(arguments),
            )
        )
    return tuple(calls)


def chat(
    *,
    config: ModelConfig,
    messages: list[dict[str, Any]],
    timeout: float | None = None,
    tools: list[dict[str, Any]] | None = None,
) -> LLMResponse:
    """One chat completion with the configured model and parameters; with `tools`
    (OpenAI function definitions) the answer may carry `tool_calls`. A configuration
    the key and address policy refuses (common.llm_policy) is a `PermanentLLMError`
    before anything is sent: a row saved before the policy, or under other settings,
    sends no key where it may not.

    Long because the policy check, the call and its error mapping are one gateway call."""
    destination_check(config)
    api_key = api_key_for(config)
    limit = config.timeout_seconds
    timeout = limit if timeout is None else min(timeout, limit)
    # A known price goes to litellm too: litellm prices every call for its own use,
    # and for a model its table lacks it searches the table for near names on every
    # call (about 1 ms of CPU) before it gives up.
    own_price = config.own_price
    price = (
        {
            "input_cost_per_token": float(own_price[0]) / 1e6,
            "output_cost_per_token": float(own_price[1]) / 1e6,
        }
        if own_price is not None
        else {}
    )
    litellm = _litellm()
    started = time.monotonic()
    try:
        response = litellm.completion(
            model=config.model,
            messages=messages,
            api_base=config.api_base or None,
            api_key=api_key,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            timeout=timeout,
            num_retries=0,
            max_retries=0,
            **({"tools": tools} if tools else {}),
            **price,
        )
    except Exception as exc:  # classified below; anything unknown is permanent
        raise error_classify(exc, config=config, timeout=timeout) from exc
    latency = time.monotonic() - started
    choice = response.choices[0] if response.choices else None
    message = choice.message if choice else None
    text = (message.content if message else None) or ""
    usage = getattr(response, "usage", None)
    input_tokens = getattr(usage, "prompt_tokens", None)
    output_tokens = getattr(usage, "completion_tokens", None)
    return LLMResponse(
        text=text,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=tokens_price(
            model=config.model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            own_price=own_price,
            litellm=lambda: cost_of(response, model=config.model),
        ).cost_usd,
        latency_seconds=latency,
        model=getattr(response, "model", "") or config.model,
        tool_calls=_tool_calls(message),
    )


# ---------------------------------------------------------------- retries

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """The site's one retry policy for model calls (judges and agent runs alike).

    - Retried: `TransientLLMError` only (429, 5xx, 408/409, timeouts, refused or
      dropped connections; `error_classify` decides). A `PermanentLLMError` (a bad
      key, an unknown model, a context too long, a bad request) is never retried,
      and nor is any other exception.
    - `attempts` tries in all (the first call included).
    - After failed attempt n (1-based) the wait is `base_seconds * 2**(n-1)`, at
      most `max_seconds`, with jitter: a random point in its upper half, so that
      many calls that failed together do not retry together.
    - A server's `Retry-After` is honoured: the wait is at least that, up to
      `max_seconds` (a server asking for an hour does not stall a worker for one).
    - With a deadline (`call_with_retries`), a wait that would end past it is not
      waited: the caller gets `RetriesExhausted(out_of_time=True)` at once.

    Settings: LLM_RETRY_ATTEMPTS (5), LLM_RETRY_BASE_SECONDS (2),
    LLM_RETRY_MAX_SECONDS (60); `from_settings` reads them."""

    attempts: int = 5
    base_seconds: float = 2.0
    max_seconds: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("a retry policy makes at least one attempt")
        if self.base_seconds < 0 or self.max_seconds < 0:
            raise ValueError("a retry policy's waits are not negative")

    @classmethod
    def from_settings(cls) -> RetryPolicy:
        from django.conf import settings

        return cls(
            attempts=settings.LLM_RETRY_ATTEMPTS,
            base_seconds=settings.LLM_RETRY_BASE_SECONDS,
            max_seconds=settings.LLM_RETRY_MAX_SECONDS,
        )

    def delay(
        self,
        attempt: int,
        retry_after: float | None = None,
        *,
        uniform: Callable[[float, float], float] = random.uniform,
    ) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based) before the next."""
        cap = self.max_seconds
        delay = min(cap, self.base_seconds * 2 ** (attempt - 1))
        delay = delay / 2 + uniform(0, delay / 2)
        if retry_after is not None:
            delay = max(delay, min(retry_after, cap))
        return float(delay)


def call_with_retries(
    call: Callable[[], T],
    *,
    policy: RetryPolicy | None = None,
    deadline: float | None = None,
    on_retry: Callable[[int, TransientLLMError, float], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """`call()` (one attempt: typically `chat`, with whatever the caller does around
    each call) retried under `policy` (default: the settings'), by tenacity.
    `deadline` is a `time.monotonic()` time no wait may end past;
    `on_retry(attempt, error, delay)` is told before each wait (to log it). Raises
    `RetriesExhausted` once the attempts or the time are spent; a
    `PermanentLLMError` or any other exception from `call` propagates at once,
    untouched."""
    import tenacity

    policy = policy or RetryPolicy.from_settings()

    def failed(state: tenacity.RetryCallState) -> TransientLLMError:
        assert state.outcome is not None
        error = state.outcome.exception()
        assert isinstance(error, TransientLLMError)
        return error

    def wait(state: tenacity.RetryCallState) -> float:
        return policy.delay(state.attempt_number, failed(state).retry_after)

    def before_sleep(state: tenacity.RetryCallState) -> None:
        error, delay, attempt = failed(state), state.upcoming_sleep, state.attempt_number
        if deadline is not None and time.monotonic() + delay >= deadline:
            raise RetriesExhausted(error, attempts=attempt, out_of_time=True) from error
        if on_retry is not None:
            on_retry(state.attempt_number, error, delay)

    def give_up(state: tenacity.RetryCallState) -> T:
        error = failed(state)
        raise RetriesExhausted(error, attempts=state.attempt_number) from error

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(TransientLLMError),
        stop=tenacity.stop_after_attempt(policy.attempts),
        wait=wait,
        sleep=sleep,
        before_sleep=before_sleep,
        retry_error_callback=give_up,
    )
    return retrying(call)


_MICRODOLLAR = Decimal("0.000001")


def cost_for_tokens(
    *,
    model: str,
    own_price: tuple[Decimal, Decimal] | None,
    input_tokens: int,
    output_tokens: int,
) -> Decimal | None:
    """What a call of that many tokens costs (common.prices' order: the own price,
    else litellm's table's); None when neither prices the model."""
    return tokens_price(
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        own_price=own_price,
        litellm=lambda: _model_info_cost(model, input_tokens, output_tokens),
    ).cost_usd


def _model_info_cost(model: str, input_tokens: int, output_tokens: int) -> Decimal | None:
    try:
        info = _litellm().get_model_info(model)
    except Exception:  # a model litellm's table does not list
        return None
    per_in, per_out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if per_in is None or per_out is None:
        return None
    cost = Decimal(str(per_in)) * input_tokens + Decimal(str(per_out)) * output_tokens
    return cost.quantize(_MICRODOLLAR)


def litellm_table_cost(
    model: str,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int = 0,
    cache_creation_tokens: int = 0,
) -> Decimal | None:
    """USD from litellm's price table for the model under exactly this name (no
    guessing of providers or aliases: a near miss prices the wrong model); None
    when the table has no price for it."""
    litellm = _litellm()
    entry = litellm.model_cost.get(model) if model else None
    if not entry or ("input_cost_per_token" not in entry and "output_cost_per_token" not in entry):
        return None
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model,
            # litellm counts cached tokens inside the prompt and prices
            # them apart; Anthropic reports them beside input_tokens.
            prompt_tokens=input_tokens + cache_read_tokens + cache_creation_tokens,
            completion_tokens=output_tokens,
            cache_read_input_tokens=cache_read_tokens,
            cache_creation_input_tokens=cache_creation_tokens,
        )
    except Exception as exc:  # an entry litellm cannot use: unknown, not zero
        logger.info("litellm could not price %s: %s", model, exc)
        return None
    return Decimal(str(round(prompt_cost + completion_cost, 6)))


def cost_of(response: Any, *, model: str) -> Decimal | None:
    """USD from litellm's price table, or None when the model has no price there."""
    # litellm prices every call for its own logging; reuse that rather than price twice.
    hidden = getattr(response, "_hidden_params", None)
    if isinstance(hidden, dict) and "response_cost" in hidden:
        cost = hidden["response_cost"]  # None: litellm found no price either
    else:
        try:
            cost = _litellm().completion_cost(completion_response=response, model=model)
        except Exception:  # litellm raises for models it has no price for
            return None
    if cost is None:
        return None
    cost = Decimal(str(cost)).quantize(_MICRODOLLAR)
    # litellm answers 0 for a model it knows nothing about in some code paths;
    # a real price table entry for a paid model is never exactly 0 for a non-empty call.
    if cost == 0 and not _has_price(model):
        return None
    return cost


def _has_price(model: str) -> bool:
    try:
        info = _litellm().get_model_info(model)
    except Exception:
        return False
    return bool(info.get("input_cost_per_token") or info.get("output_cost_per_token"))


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _caused_by(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    seen = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kinds):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


# A malformed URL, a scheme httpx cannot speak, a host name that does not resolve:
# configuration, never a passing fault.
def _bad_url_errors() -> tuple[type[BaseException], ...]:
    import httpx  # with litellm, on the first failed call only

    return (httpx.UnsupportedProtocol, httpx.InvalidURL, socket.gaierror)


def _missing_credentials(exc: BaseException) -> bool:
    """The OpenAI SDK's refusal to build a client without a key: a plain
    `OpenAIError` (not an API answer) somewhere in the chain."""
    import openai

    seen = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if type(current) is openai.OpenAIError or "Missing credentials" in str(current):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _configuration_error(
    exc: Exception, *, config: ModelConfig, where: str, detail: str
) -> PermanentLLMError | None:
    if _caused_by(exc, _bad_url_errors()):
        return PermanentLLMError(
            f"{where} is not a URL the site can reach (check the api_base): {detail}"
        )
    if _missing_credentials(exc):
        return PermanentLLMError(
            f"no API key for {config.model} (give the judge or model an api key variable, "
            f"or an api_base for a server that needs none): {detail}"
        )
    return None


def error_classify(exc: Exception, *, config: ModelConfig, timeout: float) -> LLMError:
    """Turn litellm's exception into a transient or permanent error whose message says
    what happened in the organiser's terms."""
    if isinstance(exc, LLMError):
        return exc
    import httpx
    import openai

    litellm = _litellm()
    where = llm_policy.redact(config.api_base, limit=300) if config.api_base else config.model
    # What the server answered ends up on pages and in the API (a judgment's or a
    # run's error): cut, and with anything like a key blanked, whoever answered.
    key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    detail = llm_policy.redact(first_line, secrets=[key])
    retry_after = _retry_after(exc)
    # Permanent first: ContextWindowExceededError is a BadRequestError, and litellm
    # wraps a missing key or a bad URL as a 500 (InternalServerError).
    if configuration := _configuration_error(exc, config=config, where=where, detail=detail):
        return configuration
    if isinstance(exc, litellm.ContextWindowExceededError):
        return PermanentLLMError(
            f"the prompt is longer than {config.model}'s context window; lower the code and "
            f"log budgets or use a model with a larger context ({detail})"
        )
    if isinstance(exc, litellm.AuthenticationError | litellm.PermissionDeniedError):
        return PermanentLLMError(
            f"{where} refused the API key (check {config.api_key_env or 'the provider key'}): "
            f"{detail}"
        )
    if isinstance(exc, litellm.NotFoundError):
        return PermanentLLMError(f"{where} does not know the model {config.model}: {detail}")
    if isinstance(exc, litellm.RateLimitError):
        return TransientLLMError(f"rate limited by {where}: {detail}", retry_after=retry_after)
    if isinstance(exc, litellm.Timeout) or _caused_by(exc, (httpx.TimeoutException,)):
        return TransientLLMError(f"no answer from {where} within {timeout:g} s")
    if _caused_by(exc, (httpx.ConnectError, ConnectionRefusedError)) or isinstance(
        exc, litellm.APIConnectionError
    ):
        return TransientLLMError(f"could not connect to {where}: {detail}")
    if isinstance(
        exc,
        litellm.InternalServerError
        | litellm.ServiceUnavailableError
        | litellm.BadGatewayError
        | openai.InternalServerError,
    ):
        return TransientLLMError(f"server error from {where}: {detail}", retry_after=retry_after)
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and (status >= 500 or status in (408, 409, 429)):
        return TransientLLMError(f"HTTP {status} from {where}: {detail}", retry_after=retry_after)
    if isinstance(exc, litellm.BadRequestError | litellm.UnprocessableEntityError):
        return PermanentLLMError(f"{where} rejected the request: {detail}")
    return PermanentLLMError(f"the call to {config.model} failed: {detail}")


_warm = False
_warm_lock = threading.Lock()


def warm_up() -> None:
    """Pay litellm's imports once per process, when a worker starts, rather than inside
    the first judgments: the first call otherwise imports ~100 modules while holding
    the import lock every other judge thread then waits on. A caller that comes while
    another thread warms up waits until it is done (a judgment's time limit starts
    after it). No network is used."""
    global _warm
    with _warm_lock:
        if not _warm:
            _warm_up_once()
            _warm = True


def _warm_up_once() -> None:
    import importlib

    import httpx

    litellm = _litellm()

    for module in (
        "httpcore._sync.http11",
        "httpcore._sync.connection",
        "httpcore._sync.connection_pool",
        "httpcore._backends.sync",
        "litellm._service_logger",
    ):
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    httpx.Client().close()
    # A warm-up that fails changes nothing: the first judgment pays the imports instead.
    with contextlib.suppress(Exception):
        litellm.completion(
            model="openai/warm-up",
            messages=[{"role": "user", "content": "warm up"}],
            mock_response="{}",
            api_key="warm-up",
            max_tokens=1,
            timeout=1,
            num_retries=0,
            max_retries=0,
        )


def supports_pdf_input(model: str) -> bool:
    """Whether litellm's model table says `model` takes a PDF as message content;
    False for a model it does not know."""
    try:
        return bool(_litellm().supports_pdf_input(model=model))
    except Exception:  # a model litellm does not know reads text only
        return False


def model_provider(model: str) -> str | None:
    """The provider litellm routes the model name to (`openai`, `anthropic`, ...),
    or None for a name it cannot route."""
    try:
        return str(_litellm().get_llm_provider(model)[1])
    except Exception:  # litellm refuses names it cannot route
        return None


def model_problem(model: str, *, api_base: str = "") -> str | None:
    """Why litellm cannot call `model`, or None. A model is known when litellm's model
    list or price table names it (with or without its provider prefix); any model
    litellm can route is accepted for an explicit `api_base` (a self-hosted server
    serves whatever it was started with)."""
    name = model.strip()
    if not name:
        return "no model given"
    litellm = _litellm()
    try:
        litellm.get_llm_provider(name, api_base=api_base or None)
    except Exception as exc:  # litellm raises for a name it cannot route
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        return f"litellm cannot route the model {name!r} ({detail or 'unknown provider'})"
    if api_base:
        return None
    tail = name.split("/", 1)[1] if "/" in name else name
    if name in litellm.model_cost or tail in litellm.model_cost or name in litellm.model_list:
        return None
    return (
        f"unknown model {name!r}: litellm's model list and price table do not name it "
        "(give --api-base for a model on a self-hosted server)"
    )


# One small call that proves a configuration works: the key, the server, the model.
CHECK_PROMPT = "This is a connection check. Reply with the single word: ok"
CHECK_MAX_TOKENS = 16
CHECK_TIMEOUT_SECONDS = 60.0


def model_check(config: ModelConfig) -> LLMResponse:
    """Call the configured model once with a tiny prompt (a few tokens, at most a
    minute); raises `LLMError` with the provider's reason when it cannot answer."""
    from dataclasses import replace

    small = replace(
        config,
        max_tokens=CHECK_MAX_TOKENS,
        timeout_seconds=min(config.timeout_seconds, CHECK_TIMEOUT_SECONDS),
    )
    return chat(config=small, messages=[{"role": "user", "content": CHECK_PROMPT}])


def usage_line(response: LLMResponse) -> str:
    """What a check prints: the model that answered, its tokens and cost."""
    cost = f"${response.cost_usd:.6f}" if response.cost_usd is not None else "unknown cost"
    return (
        f"{response.model} answered {response.text.strip()[:40]!r} in "
        f"{response.latency_seconds:.1f} s: {response.input_tokens} input + "
        f"{response.output_tokens} output tokens, {cost}"
    )
