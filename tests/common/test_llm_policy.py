"""The key and address policy of every model call (common/llm_policy.py), issue 40
findings "provider keys leave" and "SSRF": which variable a key may be read from,
where a key may go, which servers an `api_base` may name, and what an error may
repeat of a server's answer. The gateway applies it again before each call, so a
row saved before the policy sends nothing it may not (checked against real
loopback servers that record what reaches them)."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from common import llm as gateway
from common.llm_policy import (
    ECHO_MAX_CHARS,
    api_base_problem,
    key_destination_problem,
    key_env_problem,
    llm_destination_problems,
    redact,
)
from tests.support.fake_llm import answer

# A key shaped as AWS's and Anthropic's would be, and the body of a metadata service.
AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMIxK7MDENGxbPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLE0token0value0that0is0long"
METADATA_BODY = (
    "ami-id\ninstance-id i-0abc\niam/security-credentials/site-role\n"
    f"AccessKeyId: {AWS_KEY_ID}\nSecretAccessKey={AWS_SECRET}\nToken {SESSION_TOKEN}\n"
    "Authorization: Bearer sk-ant-api03-leakedleakedleaked\n" + "padding " * 400
)


class _MetadataHandler(BaseHTTPRequestHandler):
    """A loopback "metadata service": answers anything with credentials, as text."""

    seen: list[dict[str, str]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).seen.append(dict(self.headers))
        body = METADATA_BODY.encode()
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def metadata_server():
    _MetadataHandler.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _MetadataHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


# ---------------------------------------------------------------- key variables


@pytest.mark.parametrize(
    "name", ["SECRET_KEY", "DATABASE_URL", "REDIS_URL", "AWS_SECRET_ACCESS_KEY", "DEBUG"]
)
def test_no_variable_of_the_site_is_ever_a_key_variable(production_policy, name):
    production_policy.LLM_KEY_ENV_ALLOW = ["*"]  # even when the deployment allows all
    assert name in (key_env_problem(name) or "")


def test_only_names_the_deployment_allows_are_key_variables(production_policy):
    assert key_env_problem("ANTHROPIC_API_KEY") is None
    assert "LLM_KEY_ENV_ALLOW: *_API_KEY" in (key_env_problem("HOME") or "")
    production_policy.LLM_KEY_ENV_ALLOW = ["MY_LLM_TOKEN"]
    assert key_env_problem("MY_LLM_TOKEN") is None
    assert key_env_problem("ANTHROPIC_API_KEY") is not None


# ---------------------------------------------------------------- where a key goes


def test_a_providers_key_goes_only_to_that_providers_hosts(production_policy):
    """Finding "provider keys leave": ANTHROPIC_API_KEY (the judges' key) named with
    an api_base of one's own went there."""
    own = key_destination_problem(
        name="ANTHROPIC_API_KEY", api_base="http://127.0.0.1:8081/v1", model="openai/x"
    )
    assert own and "api.anthropic.com" in own and "LLM_KEY_HOSTS" in own
    assert (
        key_destination_problem(
            name="ANTHROPIC_API_KEY", api_base="https://api.anthropic.com", model="x"
        )
        is None
    )
    # With no api_base litellm sends it to the model's provider: it must be the key's.
    other = key_destination_problem(
        name="ANTHROPIC_API_KEY", api_base="", model="openai/gpt-4o-mini"
    )
    assert other and "openai" in other
    assert (
        key_destination_problem(
            name="ANTHROPIC_API_KEY", api_base="", model="anthropic/claude-3-7-sonnet-20250219"
        )
        is None
    )
    assert key_destination_problem(name="OPENAI_API_KEY", api_base="", model="o4-mini") is None


def test_a_key_goes_to_a_server_of_ones_own_only_where_the_deployment_lists_it(
    production_policy,
):
    base = "http://vllm.internal:8000/v1"
    refused = key_destination_problem(name="VLLM_API_KEY", api_base=base, model="openai/q")
    assert refused and '"VLLM_API_KEY=vllm.internal"' in refused
    production_policy.LLM_KEY_HOSTS = {"VLLM_API_KEY": ["vllm.internal"]}
    assert key_destination_problem(name="VLLM_API_KEY", api_base=base, model="openai/q") is None
    production_policy.LLM_KEY_HOSTS = {"ANTHROPIC_API_KEY": [".corp.example"]}
    assert (
        key_destination_problem(
            name="ANTHROPIC_API_KEY", api_base="https://llm.corp.example/v1", model="x"
        )
        is None
    )


def test_the_key_hosts_setting_is_read_from_the_environment(monkeypatch):
    import importlib

    from django.core.exceptions import ImproperlyConfigured

    import mlrbench_site.settings.limits as limits

    monkeypatch.setenv("LLM_KEY_HOSTS", "ANTHROPIC_API_KEY=proxy.corp, Proxy2.corp;VLLM_*=vllm")
    try:
        assert importlib.reload(limits).LLM_KEY_HOSTS == {
            "ANTHROPIC_API_KEY": ["proxy.corp", "proxy2.corp"],
            "VLLM_*": ["vllm"],
        }
        monkeypatch.setenv("LLM_KEY_HOSTS", "ANTHROPIC_API_KEY")
        with pytest.raises(ImproperlyConfigured, match="LLM_KEY_HOSTS"):
            importlib.reload(limits)
    finally:
        monkeypatch.delenv("LLM_KEY_HOSTS")
        importlib.reload(limits)


# ---------------------------------------------------------------- addresses


@pytest.mark.parametrize(
    "api_base",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://169.254.10.1:8080/v1",
        "http://[fe80::1]/v1",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://[fd00:ec2::254]/",
        "http://100.100.100.200/latest/meta-data/",
    ],
)
def test_link_local_and_metadata_addresses_are_refused(production_policy, api_base):
    refused = api_base_problem(api_base)
    assert refused and "LLM_API_BASE_ALLOWED_HOSTS" in refused


def test_the_sites_own_services_are_refused_and_other_loopback_servers_are_not(
    production_policy, closed_port
):
    production_policy.REDIS_URL = f"redis://127.0.0.1:{closed_port}/0"
    production_policy.CELERY_BROKER_URL = ""
    production_policy.AWS_S3_ENDPOINT_URL = "http://minio:9000"
    redis = api_base_problem(f"http://localhost:{closed_port}/v1")
    assert redis and "REDIS_URL" in redis
    assert "REDIS_URL" in (api_base_problem(f"http://0.0.0.0:{closed_port}") or "")
    assert "AWS_S3_ENDPOINT_URL" in (api_base_problem("http://minio:9000/v1") or "")
    # A local model server (Ollama, vLLM, llama.cpp) is the documented way to judge.
    assert api_base_problem("http://127.0.0.1:11434/v1") is None
    assert api_base_problem("http://10.1.2.3:8000/v1") is None


def test_the_deployment_may_allow_a_refused_server(production_policy, closed_port):
    production_policy.REDIS_URL = f"redis://127.0.0.1:{closed_port}/0"
    production_policy.LLM_API_BASE_ALLOWED_HOSTS = ["169.254.0.0/16", f"127.0.0.1:{closed_port}"]
    assert api_base_problem("http://169.254.1.2:8000/v1") is None
    assert api_base_problem(f"http://127.0.0.1:{closed_port}/v1") is None
    assert api_base_problem("http://metadata.google.internal/") is not None


def test_every_problem_is_on_its_field(production_policy):
    problems = llm_destination_problems(
        models=["openai/x"], api_base="http://169.254.169.254/v1", api_key_env="SECRET_KEY"
    )
    assert {(p.field, p.code) for p in problems} == {
        ("api_base", "address_not_allowed"),
        ("api_key_env", "not_allowed"),
    }


# ---------------------------------------------------------------- the gateway


@pytest.mark.parametrize(
    ("key_env", "says"),
    [("SECRET_KEY", "site's own settings"), ("ANTHROPIC_API_KEY", "api.anthropic.com")],
)
def test_the_gateway_sends_no_key_the_policy_refuses(
    production_policy, fake_llm, monkeypatch, key_env, says
):
    """A row written before the policy (or under other settings) still sends nothing:
    the gateway checks again before every call."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-the-judges-key")
    fake_llm.script(answer("ok"))
    config = gateway.ModelConfig(
        model="openai/x", caller="judge old-row", api_base=fake_llm.url, api_key_env=key_env
    )
    with pytest.raises(gateway.PermanentLLMError, match=says):
        gateway.chat(config=config, messages=[{"role": "user", "content": "hi"}])
    assert fake_llm.requests == []


def test_the_gateway_calls_no_server_the_address_policy_refuses(production_policy, fake_llm):
    # The loopback server stands for one of the site's own services (here its storage).
    production_policy.AWS_S3_ENDPOINT_URL = f"http://127.0.0.1:{fake_llm.port}"
    config = gateway.ModelConfig(model="openai/x", caller="agent run 7", api_base=fake_llm.url)
    with pytest.raises(gateway.PermanentLLMError, match="AWS_S3_ENDPOINT_URL"):
        gateway.chat(config=config, messages=[{"role": "user", "content": "hi"}])
    assert fake_llm.requests == []


def test_what_a_server_answered_is_cut_and_its_secrets_blanked(metadata_server, monkeypatch):
    """Finding "SSRF": the body a server returned was repeated in the run's error."""
    monkeypatch.setenv("TEST_AGENT_API_KEY", "sk-test-agent-key-0815")
    port = metadata_server.server_address[1]
    config = gateway.ModelConfig(
        model="openai/x",
        caller="agent run 7",
        api_base=f"http://127.0.0.1:{port}/v1",
        api_key_env="TEST_AGENT_API_KEY",
    )
    with pytest.raises(gateway.LLMError) as caught:
        gateway.chat(config=config, messages=[{"role": "user", "content": "hi"}])
    message = str(caught.value)
    assert "ami-id" in message  # what answered is still said...
    for secret in (AWS_KEY_ID, AWS_SECRET, SESSION_TOKEN, "sk-ant-api03", "sk-test-agent-key"):
        assert secret not in message  # ...without its secrets
    assert "[redacted]" in message
    assert len(message) < ECHO_MAX_CHARS + 200


def test_redact_blanks_key_shapes_and_this_processs_secrets(settings, monkeypatch):
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", "plain-words-that-are-a-key")
    text = redact(
        "error: api_key=abc123 x-api-key: zzz http://user:pw@host/v1 plain-words-that-are-a-key "
        f"{settings.SECRET_KEY} AIzaSyA1234567890abcdefghijklmnopqrstu ghp_abcdefghijklmnop1234 "
        "model claude-3-7-sonnet-20250219 at http://127.0.0.1:8081/v1/chat/completions"
    )
    for secret in ("abc123", "zzz", "user:pw", "plain-words", settings.SECRET_KEY, "AIza", "ghp_"):
        assert secret not in text
    # What is not a secret stays readable.
    assert "claude-3-7-sonnet-20250219" in text and "127.0.0.1:8081/v1/chat/completions" in text
    assert len(redact("x" * 5000)) == ECHO_MAX_CHARS


class _RedirectHandler(BaseHTTPRequestHandler):
    """An allowed server that sends its callers on to the "metadata service"."""

    target = ""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(307)
        self.send_header("location", type(self).target)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_a_redirect_is_not_followed_past_the_address_policy(metadata_server):
    """An allowed `api_base` answering 307 sent litellm's OpenAI client on to any
    address (a link-local metadata service, say), which no policy checked."""
    _RedirectHandler.target = f"http://127.0.0.1:{metadata_server.server_address[1]}/latest"
    redirector = ThreadingHTTPServer(("127.0.0.1", 0), _RedirectHandler)
    thread = threading.Thread(target=redirector.serve_forever, daemon=True)
    thread.start()
    try:
        config = gateway.ModelConfig(
            model="openai/x",
            caller="judge j",
            api_base=f"http://127.0.0.1:{redirector.server_address[1]}/v1",
        )
        with pytest.raises(gateway.LLMError) as caught:
            gateway.chat(config=config, messages=[{"role": "user", "content": "hi"}])
    finally:
        redirector.shutdown()
        redirector.server_close()
        thread.join(timeout=5)

    assert _MetadataHandler.seen == []  # never reached
    assert "307" in str(caught.value)
