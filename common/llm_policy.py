"""Where a model call may send a key, which servers it may call, and what of a
server's answer an error may repeat: the one policy for judges and agent runs.

A judge or an agent run names the environment variable that holds its key
(`api_key_env`) and, optionally, its own server (`api_base`). Both are checked
when the row is saved (model `clean()`, so the admin, `judges add`, the agent-run
form, API and command) and again by the gateway before every call
(`common.llm.chat`), so a row written before this policy, or under settings that
changed since, still sends nothing it may not.

- **Key variables** (`key_env_problem`): a name the deployment allows
  (`LLM_KEY_ENV_ALLOW`, formerly `AGENT_RUN_KEY_ENV_ALLOW`; default `*_API_KEY`)
  and never one the site reads itself (SECRET_KEY, DATABASE_URL, AWS_*, any Django
  setting), whatever the allow-list says.
- **Where a key goes** (`key_destination_problem`): a provider's key
  (ANTHROPIC_API_KEY, ...) only to that provider's hosts, or with no `api_base` only
  for a model litellm routes to that provider; any key to an `api_base` host the
  deployment lists for it (`LLM_KEY_HOSTS`). A variable that is no provider's goes
  to no `api_base` the deployment has not listed for it.
- **Addresses** (`api_base_problem`): an `api_base` whose host is a cloud metadata
  name or address, is link-local (169.254/16, fe80::/10), or is the host and port of
  one of the site's own services (DATABASE_URL, REDIS_URL, CELERY_BROKER_URL,
  AWS_S3_ENDPOINT_URL) is refused unless `LLM_API_BASE_ALLOWED_HOSTS` allows it.
  Loopback and private addresses stay allowed: a local Ollama or vLLM is the
  documented way to judge without a provider.
- **Echoes** (`redact`): what a server answered, when an error repeats it, is cut
  to `ECHO_MAX_CHARS` with anything that looks like a key or token blanked.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import os
import re
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from django.conf import settings

from .errors import ErrorItem

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_KEY_ENV_ALLOW = ("*_API_KEY",)

# Variables no key is ever read from, whatever LLM_KEY_ENV_ALLOW says: the site's
# own secrets and connections (beside every variable the settings read and every
# Django setting's name, checked apart).
KEY_ENV_DENY = (
    "SECRET_KEY",
    "DJANGO_*",
    "DATABASE_*",
    "*_URL",
    "AWS_*",
    "*PASSWORD*",
    "*_SECRET*",
    "GOOGLE_APPLICATION_CREDENTIALS",
)

# A provider's key variable: the litellm providers it is for, and the hosts it may be
# sent to (`.suffix`: any host under it). LLM_KEY_HOSTS adds hosts.
PROVIDER_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "OPENAI_API_KEY": (("openai", "text-completion-openai"), ("api.openai.com",)),
    "ANTHROPIC_API_KEY": (("anthropic",), ("api.anthropic.com",)),
    "GEMINI_API_KEY": (("gemini",), ("generativelanguage.googleapis.com",)),
    "GOOGLE_API_KEY": (("gemini",), ("generativelanguage.googleapis.com",)),
    "MISTRAL_API_KEY": (("mistral",), ("api.mistral.ai",)),
    "GROQ_API_KEY": (("groq",), ("api.groq.com",)),
    "DEEPSEEK_API_KEY": (("deepseek",), ("api.deepseek.com",)),
    "TOGETHERAI_API_KEY": (("together_ai",), ("api.together.xyz",)),
    "TOGETHER_API_KEY": (("together_ai",), ("api.together.xyz",)),
    "OPENROUTER_API_KEY": (("openrouter",), ("openrouter.ai",)),
    "XAI_API_KEY": (("xai",), ("api.x.ai",)),
    "COHERE_API_KEY": (("cohere", "cohere_chat"), ("api.cohere.ai", "api.cohere.com")),
    "FIREWORKS_AI_API_KEY": (("fireworks_ai",), ("api.fireworks.ai",)),
    "FIREWORKS_API_KEY": (("fireworks_ai",), ("api.fireworks.ai",)),
    "PERPLEXITYAI_API_KEY": (("perplexity",), ("api.perplexity.ai",)),
    "PERPLEXITY_API_KEY": (("perplexity",), ("api.perplexity.ai",)),
    "DEEPINFRA_API_KEY": (("deepinfra",), ("api.deepinfra.com",)),
    "AZURE_API_KEY": (("azure",), (".openai.azure.com",)),
    "HUGGINGFACE_API_KEY": (
        ("huggingface",),
        ("api-inference.huggingface.co", "router.huggingface.co"),
    ),
}

# Cloud instance metadata services (AWS, GCP, Azure, Alibaba, Oracle, OpenStack):
# they hand out the machine's own credentials to whoever asks from inside.
METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.com",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(address)
    for address in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
    + ("168.63.129.16", "192.0.0.192")
)

# The site's own services an api_base must not reach (a model call is a POST with the
# site's data to whatever answers there), with the port their scheme implies.
OWN_SERVICE_SETTINGS = ("REDIS_URL", "CELERY_BROKER_URL", "AWS_S3_ENDPOINT_URL")
DEFAULT_PORTS = {
    "postgres": 5432,
    "postgresql": 5432,
    "pgsql": 5432,
    "mysql": 3306,
    "redis": 6379,
    "rediss": 6379,
    "amqp": 5672,
    "amqps": 5671,
    "pyamqp": 5672,
    "http": 80,
    "https": 443,
}
ALLOW_SETTING = "LLM_API_BASE_ALLOWED_HOSTS"

# What an error may repeat of a server's answer.
ECHO_MAX_CHARS = 500
REDACTED = "[redacted]"


# ---------------------------------------------------------------- key variables


def key_env_allowed() -> list[str]:
    """The names and patterns a key may be read from (both settings, or the default)."""
    allowed = [*settings.LLM_KEY_ENV_ALLOW, *settings.AGENT_RUN_KEY_ENV_ALLOW]
    return allowed or list(DEFAULT_KEY_ENV_ALLOW)


def _site_reads(name: str) -> bool:
    site_names: frozenset[str] = getattr(settings, "SITE_ENV_NAMES", frozenset())
    return (
        name in site_names
        or (name.isupper() and hasattr(settings, name))
        or any(fnmatch.fnmatchcase(name, pattern) for pattern in KEY_ENV_DENY)
    )


def key_env_problem(name: str) -> str | None:
    """Why a key may not be read from the variable `name`, or None (the name only;
    `key_destination_problem` says where it may go)."""
    if _site_reads(name):
        return f"{name} is one of the site's own settings; it is never sent to a model"
    allowed = key_env_allowed()
    if not any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed):
        return (
            f"{name} is not a variable a model's API key may be read from "
            f"(LLM_KEY_ENV_ALLOW: {', '.join(allowed)}; AGENT_RUN_KEY_ENV_ALLOW is read too)"
        )
    return None


def _host_matches(host: str, pattern: str) -> bool:
    pattern = pattern.strip().lower().rstrip(".")
    if pattern.startswith("."):
        return host.endswith(pattern)
    return host == pattern.strip("[]")


def key_hosts(name: str) -> list[str]:
    """The `api_base` hosts the variable's key may be sent to: its provider's own and
    those LLM_KEY_HOSTS lists for it."""
    hosts = list(PROVIDER_KEYS[name][1]) if name in PROVIDER_KEYS else []
    for pattern, listed in settings.LLM_KEY_HOSTS.items():
        if fnmatch.fnmatchcase(name, pattern):
            hosts += listed
    return hosts


def key_destination_problem(*, name: str, api_base: str, model: str) -> str | None:
    """Why the key in `name` may not go where a call of `model` at `api_base` sends it,
    or None. Without an `api_base` litellm sends it to the model's provider."""
    if api_base:
        host = (urlsplit(api_base).hostname or "").rstrip(".")
        hosts = key_hosts(name)
        if any(_host_matches(host, pattern) for pattern in hosts):
            return None
        where = (
            f"may be sent only to {', '.join(hosts)}"
            if hosts
            else "is no provider's key, so it goes to no api_base the deployment has not "
            "listed for it"
        )
        return (
            f"{name} {where}, not to {host or api_base!r} (LLM_KEY_HOSTS lists where a key "
            f'may go: "{name}={host}" would allow this)'
        )
    if name in PROVIDER_KEYS:
        from .llm import model_provider  # litellm, imported on first use

        providers = PROVIDER_KEYS[name][0]
        provider = model_provider(model)
        if provider not in providers:
            return (
                f"{name} is {providers[0]}'s key; the model {model!r} is "
                f"{provider or 'no known provider'}'s, so the key would go to another "
                "provider (name that provider's key variable)"
            )
    return None


# ---------------------------------------------------------------- addresses


def _resolve(host: str, port: int) -> set[IPAddress]:
    """The addresses `host` resolves to; none when it does not resolve (the call then
    fails on its own, and a check when the row is saved must not need the server up)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return set()
    addresses: set[IPAddress] = set()
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        mapped = getattr(address, "ipv4_mapped", None)
        addresses.add(mapped or address)
    return addresses


def _is_local(address: IPAddress) -> bool:
    # 0.0.0.0 and :: reach this machine too.
    return address.is_loopback or address.is_unspecified


def _own_services() -> list[tuple[str, str, int]]:
    """(setting, host, port) of each service of the site's that listens on a network."""
    services = []
    database = settings.DATABASES.get("default", {})
    if database.get("HOST") and "sqlite" not in database.get("ENGINE", ""):
        engine = database["ENGINE"].rsplit(".", 1)[-1]
        port = int(database.get("PORT") or DEFAULT_PORTS.get(engine, 5432))
        services.append(("DATABASE_URL", str(database["HOST"]), port))
    for name in OWN_SERVICE_SETTINGS:
        url = getattr(settings, name, "") or ""
        parts = urlsplit(url)
        if not parts.hostname:
            continue
        try:
            port = parts.port or DEFAULT_PORTS.get(parts.scheme, 0)
        except ValueError:
            continue
        services.append((name, parts.hostname, port))
    return services


def _own_service_at(host: str, addresses: set[IPAddress], port: int) -> str | None:
    for name, service_host, service_port in _own_services():
        if service_port != port:
            continue
        if service_host.lower() == host:
            return name
        theirs = _resolve(service_host, service_port)
        if addresses & theirs:
            return name
        if any(map(_is_local, theirs)) and any(map(_is_local, addresses)):
            return name
    return None


def _allowed_anyway(host: str, port: int, addresses: set[IPAddress]) -> bool:
    for entry in getattr(settings, ALLOW_SETTING, []):
        entry = entry.strip().lower()
        if not entry:
            continue
        if entry in (host, f"{host}:{port}"):
            return True
        try:
            network = ipaddress.ip_network(entry.strip("[]"), strict=False)
        except ValueError:
            continue
        if any(address in network for address in addresses):
            return True
    return False


def _address_refusal(address: IPAddress) -> str | None:
    if address in METADATA_ADDRESSES:
        return "a cloud metadata service's address"
    if address.is_link_local:
        return "a link-local address (where cloud metadata services answer)"
    if address.is_multicast or (address.is_reserved and not _is_local(address)):
        return "a multicast or reserved address"
    return None


def api_base_problem(api_base: str) -> str | None:
    """Why a model call may not be sent to `api_base`, or None."""
    if not api_base:
        return None
    parts = urlsplit(api_base)
    host = (parts.hostname or "").rstrip(".").lower()
    try:
        port = parts.port or DEFAULT_PORTS.get(parts.scheme, 80)
    except ValueError:
        return f"{api_base!r} has no valid port"
    if parts.scheme not in ("http", "https") or not host:
        return f"{api_base!r} is not an http:// or https:// URL with a host"
    addresses = _resolve(host, port)
    if _allowed_anyway(host, port, addresses):
        return None
    unless = f" (refused unless {ALLOW_SETTING} lists {host})"
    if host in METADATA_NAMES:
        return f"the api_base host {host} is a cloud metadata service{unless}"
    for address in sorted(addresses, key=str):
        if refusal := _address_refusal(address):
            return f"the api_base host {host} is {address}, {refusal}{unless}"
    if service := _own_service_at(host, addresses, port):
        return f"the api_base {host}:{port} is the site's own service ({service}){unless}"
    return None


# ---------------------------------------------------------------- the whole policy


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def llm_destination_problems(
    *, models: Iterable[str], api_base: str, api_key_env: str
) -> list[ErrorItem]:
    """Every reason calls of `models` configured so may not be made, each on its field
    (`api_key_env`, `api_base`); none: they may. A key variable that is not a
    variable's name at all is the field's own error, not this policy's."""
    problems = []
    if refusal := api_base_problem(api_base):
        problems.append(ErrorItem("address_not_allowed", refusal, "api_base"))
    if api_key_env and _ENV_NAME.match(api_key_env):
        if refusal := key_env_problem(api_key_env):
            problems.append(ErrorItem("not_allowed", refusal, "api_key_env"))
        else:
            for model in dict.fromkeys(models):
                if refusal := key_destination_problem(
                    name=api_key_env, api_base=api_base, model=model
                ):
                    problems.append(ErrorItem("key_host_not_allowed", refusal, "api_key_env"))
                    if api_base:  # the same refusal for every model
                        break
    return problems


def destination_errors(
    *, models: Iterable[str], api_base: str, api_key_env: str
) -> dict[str, list[str]]:
    """`llm_destination_problems` as a model's `clean()` raises them (field: messages)."""
    errors: dict[str, list[str]] = {}
    for problem in llm_destination_problems(
        models=models, api_base=api_base, api_key_env=api_key_env
    ):
        errors.setdefault(problem.field or "__all__", []).append(problem.message)
    return errors


# ---------------------------------------------------------------- echoes

_SECRET_PATTERNS = (
    # An Authorization header's value, whatever the scheme.
    re.compile(r"(?i)\b((?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=\-]{6,}"),
    # key=value, "key": "value", key: value for names that hold secrets.
    re.compile(
        r"""(?ix)
        ((?:api[_-]?key|access[_-]?key(?:[_-]?id)?|secret(?:[_-]?access[_-]?key)?|
            session[_-]?token|token|password|passwd|authorization|credentials?|
            private[_-]?key|x-api-key)
         ["']?\s*[:=]\s*["']?)
        [^\s"',;&}\]]+
        """
    ),
    # Provider and cloud key shapes.
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"),
    re.compile(r"\b(?:gh[pousr]|github_pat|xox[abprs]|hf)_[A-Za-z0-9_\-]{16,}"),
    # Credentials in a URL.
    re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"),
    # A long run of letters and digits mixed (a token, a signature); not across '-',
    # '.' or '/', which model names, hosts and paths are made of.
    re.compile(r"\b(?=[A-Za-z0-9_]*\d)(?=[A-Za-z0-9_]*[A-Za-z])[A-Za-z0-9_]{32,}\b"),
)
_SECRET_NAME = re.compile(r"(?i)(API_KEY|_KEY$|TOKEN|SECRET|PASSWORD|CREDENTIALS?$|_URL$)")


def _secret_values() -> list[str]:
    """The values of this process's variables that hold secrets: whatever shape they
    have, they never appear in an error."""
    values = {
        value
        for name, value in os.environ.items()
        if len(value) >= 12 and _SECRET_NAME.search(name)
    }
    secret_key = getattr(settings, "SECRET_KEY", "")
    if secret_key:
        values.add(secret_key)
    return sorted(values, key=len, reverse=True)


def _redact_match(match: re.Match[str]) -> str:
    # A pattern with a label keeps it ("api_key=" and "Bearer " stay, the value goes).
    if match.re.groups and match.group(1) is not None:
        return match.group(1) + REDACTED
    return REDACTED


def redact(text: str, *, limit: int = ECHO_MAX_CHARS, secrets: Iterable[str] = ()) -> str:
    """`text` (what a server answered) fit to repeat in an error: anything that looks
    like a key, a token or a password, and the value of any secret this process holds
    (and `secrets`), replaced by "[redacted]", then cut to `limit` characters."""
    for value in [*secrets, *_secret_values()]:
        if value:
            text = text.replace(value, REDACTED)
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(_redact_match, text)
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text
