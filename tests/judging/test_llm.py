"""The LLM gateway (common/llm.py, through judging.llm) calls litellm for real
against the loopback server: parameters from the judge's row, a timeout on every
call, no hidden retries, and errors classified as worth retrying or not."""

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from common.llm import PermanentLLMError, TransientLLMError
from judging import llm
from tests.judging.factories import JudgeFactory
from tests.support.fake_llm import answer, error

from .conftest import TEST_KEY

pytestmark = pytest.mark.django_db

MESSAGES = [{"role": "system", "content": "Judge."}, {"role": "user", "content": "A paper."}]


def test_a_call_uses_the_judges_model_parameters_and_key(fake_llm):
    judge = JudgeFactory(
        api_base=fake_llm.url, model="openai/test-judge", temperature=0.3, max_tokens=777
    )
    fake_llm.script(answer('{"ok": true}'))

    response = llm.chat(judge=judge, messages=MESSAGES)

    assert response.text == '{"ok": true}'
    assert (response.input_tokens, response.output_tokens) == (1200, 300)
    request = fake_llm.requests[0]
    assert request.path.endswith("/chat/completions")
    assert request.model == "test-judge"
    assert request.body["temperature"] == 0.3
    assert request.body["max_tokens"] == 777
    assert request.messages == MESSAGES
    assert request.headers["authorization"] == f"Bearer {TEST_KEY}"


def test_an_unpriced_model_costs_unknown_not_zero(fake_llm):
    judge = JudgeFactory(api_base=fake_llm.url, model="openai/test-judge")
    fake_llm.script(answer("{}"))

    assert llm.chat(judge=judge, messages=MESSAGES).cost_usd is None


def test_a_priced_model_costs_what_litellms_table_says(fake_llm):
    import litellm

    judge = JudgeFactory(api_base=fake_llm.url, model="openai/gpt-4o-mini")
    fake_llm.script(answer("{}"))

    cost = llm.chat(judge=judge, messages=MESSAGES).cost_usd

    info = litellm.get_model_info("gpt-4o-mini")
    expected = 1200 * info["input_cost_per_token"] + 300 * info["output_cost_per_token"]
    assert cost is not None and float(cost) == pytest.approx(expected, rel=1e-3)


def test_a_judge_with_its_own_price_costs_its_tokens_at_that_price(fake_llm):
    judge = JudgeFactory(
        api_base=fake_llm.url,
        model="openai/test-judge",  # not in litellm's table
        input_usd_per_mtok=Decimal("2.5"),
        output_usd_per_mtok=Decimal("10"),
    )
    fake_llm.script(answer("{}"))

    # 1200 input tokens at $2.50 and 300 output tokens at $10 per million, exactly.
    assert llm.chat(judge=judge, messages=MESSAGES).cost_usd == Decimal("0.006")


def test_a_free_self_hosted_judge_costs_zero_not_unknown(fake_llm):
    judge = JudgeFactory(
        api_base=fake_llm.url, input_usd_per_mtok=Decimal(0), output_usd_per_mtok=Decimal(0)
    )
    fake_llm.script(answer("{}"))

    cost = llm.chat(judge=judge, messages=MESSAGES).cost_usd

    assert cost is not None and cost == 0


def test_a_judge_has_both_prices_or_neither():
    with pytest.raises(IntegrityError), transaction.atomic():
        JudgeFactory(input_usd_per_mtok=Decimal(1), output_usd_per_mtok=None)
    with pytest.raises(IntegrityError), transaction.atomic():
        JudgeFactory(input_usd_per_mtok=Decimal(-1), output_usd_per_mtok=Decimal(1))
    judge = JudgeFactory.build(input_usd_per_mtok=None, output_usd_per_mtok=Decimal(1))
    with pytest.raises(ValidationError, match="both the input and the output price"):
        judge.full_clean()


@pytest.mark.parametrize(
    ("behaviour", "kind", "says"),
    [
        (error(429, "slow down"), TransientLLMError, "rate limited"),
        (error(500, "boom"), TransientLLMError, "server error"),
        (error(503, "overloaded"), TransientLLMError, "server error"),
        (error(401, "invalid api key"), PermanentLLMError, "refused the API key"),
        (
            error(400, "This model's maximum context length is 8192 tokens"),
            PermanentLLMError,
            "context window",
        ),
        (error(404, "model not found"), PermanentLLMError, "does not know the model"),
        (error(400, "bad field"), PermanentLLMError, "rejected the request"),
    ],
)
def test_errors_are_classified_and_never_retried_underneath(fake_llm, behaviour, kind, says):
    judge = JudgeFactory(api_base=fake_llm.url)
    fake_llm.script(behaviour)

    with pytest.raises(kind, match=says):
        llm.chat(judge=judge, messages=MESSAGES)

    # litellm and the SDK below it must not retry on their own: the run does.
    assert len(fake_llm.requests) == 1


def test_a_rate_limit_passes_on_the_servers_retry_after(fake_llm):
    judge = JudgeFactory(api_base=fake_llm.url)
    fake_llm.script(error(429, "slow down", headers={"Retry-After": "7"}))

    with pytest.raises(TransientLLMError) as caught:
        llm.chat(judge=judge, messages=MESSAGES)

    assert caught.value.retry_after == 7


def test_an_answer_slower_than_the_timeout_is_a_transient_timeout(fake_llm):
    judge = JudgeFactory(api_base=fake_llm.url, timeout_seconds=0.3)
    fake_llm.script(answer("{}", delay=3))

    with pytest.raises(TransientLLMError, match=r"no answer .* within 0.3 s"):
        llm.chat(judge=judge, messages=MESSAGES)
    assert len(fake_llm.requests) == 1


def test_a_closed_port_is_a_transient_connection_error(closed_port):
    judge = JudgeFactory(api_base=f"http://127.0.0.1:{closed_port}/v1")

    with pytest.raises(TransientLLMError, match="could not connect"):
        llm.chat(judge=judge, messages=MESSAGES)


def test_a_missing_key_variable_fails_before_any_call(fake_llm, monkeypatch):
    monkeypatch.delenv("TEST_JUDGE_KEY")
    judge = JudgeFactory(api_base=fake_llm.url)

    with pytest.raises(PermanentLLMError, match="TEST_JUDGE_KEY .* not set"):
        llm.chat(judge=judge, messages=MESSAGES)
    assert fake_llm.requests == []
