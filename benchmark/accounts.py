"""Teams, agents and API tokens: every write, and the token check the API uses."""

import hashlib
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.text import slugify

from common.errors import NotFound, ValidationFailed

from .models import Agent, ApiToken, ModelFamily, Team
from .models.agents import AGENT_NAME_PATTERN
from .roles import organiser_grant, organiser_revoke, superuser_grant, superuser_revoke

# Agent names are slugs, with dots allowed: the published agents are named
# after their models (`gemini-2.5-pro-preview-03-25`).
_AGENT_NAME_RE = re.compile(AGENT_NAME_PATTERN)
TOKEN_PREFIX = "mlrb_"  # noqa: S105 - a label that makes keys recognisable, not a secret


class AccountError(ValidationFailed):
    """A request about teams, agents or tokens that cannot be done; the message says why."""


@dataclass(frozen=True)
class RoleGrant:
    grant: Callable[[User], object]
    revoke: Callable[[User], object]


# How each role of `benchmark.roles` is given and taken (`accounts user-create
# --organiser`, `accounts role-add`): the reviews app registers "reviewer" (a
# reviewer has a profile) when it loads, so this app never imports it.
USER_ROLES: dict[str, RoleGrant] = {
    "organiser": RoleGrant(
        grant=lambda user: organiser_grant(user=user),
        revoke=lambda user: organiser_revoke(user=user),
    ),
    "superuser": RoleGrant(
        grant=lambda user: superuser_grant(user=user),
        revoke=lambda user: superuser_revoke(user=user),
    ),
}


def user_role_register(
    *, name: str, grant: Callable[[User], object], revoke: Callable[[User], object]
) -> None:
    USER_ROLES[name] = RoleGrant(grant=grant, revoke=revoke)


def _roles_check(names: Iterable[str]) -> None:
    unknown = [role for role in names if role not in USER_ROLES]
    if unknown:
        raise AccountError(
            f"unknown role(s): {', '.join(unknown)} (the roles: {', '.join(sorted(USER_ROLES))})",
            code="invalid_choice",
            field="roles",
        )


def user_role_add(*, user: User, role: str) -> None:
    _roles_check([role])
    with transaction.atomic():
        USER_ROLES[role].grant(user)


def user_role_remove(*, user: User, role: str) -> None:
    _roles_check([role])
    with transaction.atomic():
        USER_ROLES[role].revoke(user)


# Django's own checks when the settings name none: a command-line password is
# still no shorter than 8 characters, not a common one, not the user's name.
_DEFAULT_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]


def _password_validators() -> list:
    from django.conf import settings
    from django.contrib.auth.password_validation import get_password_validators

    return get_password_validators(
        settings.AUTH_PASSWORD_VALIDATORS or _DEFAULT_PASSWORD_VALIDATORS
    )


def user_create(
    *,
    username: str,
    password: str,
    email: str = "",
    roles: Iterable[str] = (),
) -> User:
    """A new user who can sign in, with the roles named (`USER_ROLES`). The name,
    the e-mail address and the password are checked (Django's password
    validators) before anything is written."""
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError
    from django.core.validators import validate_email

    if User.objects.filter(username=username).exists():
        raise AccountError(f"a user {username!r} exists already", field="username")
    roles = list(roles)
    _roles_check(roles)
    user = User(username=username, email=email)
    try:
        User.username_validator(username)
        if email:
            validate_email(email)
        validate_password(password, user, password_validators=_password_validators())
    except ValidationError as exc:
        raise AccountError(" ".join(exc.messages)) from exc
    user.set_password(password)
    with transaction.atomic():
        user.save()
        for role in roles:
            USER_ROLES[role].grant(user)
    return user


def team_create(*, name: str, creator: User) -> Team:
    """A new team, with its creator as the first member."""
    name = name.strip()
    slug = slugify(name)
    if not name or not slug:
        raise AccountError("a team needs a name with at least one letter or digit", field="name")
    try:
        with transaction.atomic():
            team = Team.objects.create(name=name, slug=slug)
    except IntegrityError:
        raise AccountError(
            f"a team named {name!r} already exists", code="duplicate", field="name"
        ) from None
    team.members.add(creator)
    return team


def teams_of(user: User) -> QuerySet[Team]:
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(members=user)


def agents_of(user: User) -> QuerySet[Agent]:
    """The agents the user may submit for: those of the user's teams."""
    if not user.is_authenticated:
        return Agent.objects.none()
    return Agent.objects.filter(team__members=user).select_related("team").distinct()


def user_owns_agent(*, user: User, agent: Agent) -> bool:
    return user.is_authenticated and agent.team.members.filter(pk=user.pk).exists()


def agent_register(
    *,
    user: User,
    team: Team,
    name: str,
    display_name: str,
    base_model: str = "",
    coding_agent: str = "",
    scaffold: str = "",
    model_family: str = ModelFamily.OTHER,
    description: str = "",
    links: list[str] | None = None,
) -> Agent:
    if not team.members.filter(pk=user.pk).exists():
        raise AccountError(
            "you can only register agents for a team you belong to",
            code="not_a_member",
            field="team",
        )
    if not _AGENT_NAME_RE.match(name):
        raise AccountError(
            "the name must be lower-case letters, digits, '.', '-' or '_' "
            "(at most 100, starting with a letter or digit)",
            field="name",
        )
    if model_family not in ModelFamily.values:
        raise AccountError(
            f"unknown model family {model_family!r}", code="invalid_choice", field="model_family"
        )
    try:
        with transaction.atomic():
            return Agent.objects.create(
                team=team,
                name=name,
                display_name=display_name.strip() or name,
                base_model=base_model.strip(),
                coding_agent=coding_agent.strip(),
                scaffold=scaffold.strip(),
                model_family=model_family,
                description=description,
                links=links or [],
            )
    except IntegrityError:
        raise AccountError(
            f"an agent named {name!r} already exists", code="duplicate", field="name"
        ) from None


@dataclass(frozen=True)
class NewApiToken:
    token: ApiToken
    key: str  # shown to the user once, never stored


def _key_sha256(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def api_token_create(*, user: User, name: str) -> NewApiToken:
    name = name.strip()[:100]
    if not name:
        raise AccountError("a token needs a name, e.g. the machine it is for", field="name")
    key = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name, prefix=key[: len(TOKEN_PREFIX) + 6], key_sha256=_key_sha256(key)
    )
    return NewApiToken(token=token, key=key)


def api_token_revoke(*, user: User, token_id: int) -> ApiToken:
    token = ApiToken.objects.filter(pk=token_id, user=user).first()
    if token is None:
        raise NotFound("no such token")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def api_token_authenticate(*, key: str) -> ApiToken | None:
    """The active token with this key (and its user), or None."""
    token = (
        ApiToken.objects.select_related("user")
        .filter(key_sha256=_key_sha256(key), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is not None:
        now = timezone.now()
        # One write a minute at most, however busy the client.
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token
