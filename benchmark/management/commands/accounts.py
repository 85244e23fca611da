"""Teams, agents and API tokens from the command line, so that a site can be
set up by a script:

    python manage.py accounts user-create alice --email alice@example.org --password-env ALICE_PW
    python manage.py accounts user-create olga --organiser --password-env OLGA_PW
    python manage.py accounts role-add alice reviewer      # organiser, reviewer, superuser
    python manage.py accounts role-remove alice reviewer
    python manage.py accounts team-create "My lab" --user alice
    python manage.py accounts agent-register my-agent-v2 --team my-lab --user alice \\
        --display-name "My agent v2" --base-model anthropic/claude-3-7-sonnet-20250219
    python manage.py accounts token-create --user alice --name laptop   # prints the key once
"""

import getpass
import os
import sys

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from benchmark.accounts import (
    USER_ROLES,
    agent_register,
    api_token_create,
    team_create,
    user_create,
    user_role_add,
    user_role_remove,
)
from benchmark.forms import model_family_guess
from benchmark.models import ModelFamily, Team
from benchmark.roles import user_roles
from common.errors import ApplicationError


class Command(BaseCommand):
    help = "Create teams, register agents and create API tokens (the key is printed once)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        user = sub.add_parser("user-create", help="a user who can sign in")
        user.add_argument("username", metavar="USERNAME")
        user.add_argument("--email", default="", metavar="E")
        user.add_argument(
            "--password-env",
            metavar="VAR",
            help="the environment variable holding the password (else: asked twice)",
        )
        user.add_argument(
            "--organiser",
            "--staff",  # its old name, still documented in places
            action="store_true",
            dest="organiser",
            help="an organiser: the admin for the site's models, review rounds, judges, "
            "releases, agent runs (--staff is the same)",
        )
        user.add_argument("--reviewer", action="store_true", help="an expert reviewer")
        for action, what in (("role-add", "give"), ("role-remove", "take")):
            role = sub.add_parser(action, help=f"{what} an existing user a role")
            role.add_argument("username", metavar="USERNAME")
            role.add_argument(
                "role",
                choices=sorted(USER_ROLES),
                metavar="ROLE",
                help=f"one of: {', '.join(sorted(USER_ROLES))}",
            )
        team = sub.add_parser("team-create", help="a team, with USER as its first member")
        team.add_argument("name")
        team.add_argument("--user", required=True)

        agent = sub.add_parser("agent-register", help="an agent of one of USER's teams")
        agent.add_argument("name")
        agent.add_argument("--user", required=True)
        agent.add_argument("--team", help="the team's slug (may be left out if USER has one)")
        agent.add_argument("--display-name", default="")
        agent.add_argument("--base-model", default="", help="as litellm names it")
        agent.add_argument("--coding-agent", default="")
        agent.add_argument("--scaffold", default="")
        agent.add_argument(
            "--model-family",
            choices=ModelFamily.values,
            help="guessed from --base-model when left out",
        )
        agent.add_argument("--description", default="")
        agent.add_argument("--link", action="append", default=[], dest="links")

        token = sub.add_parser("token-create", help="an API token for USER; prints the key once")
        token.add_argument("--user", required=True)
        token.add_argument("--name", required=True, help="what the token is for")

    def handle(self, *args, action: str, **options):
        if action == "user-create":
            return self._user_create(options)
        if action in ("role-add", "role-remove"):
            return self._role(action, options)
        user = self._user(options["user"])
        try:
            if action == "team-create":
                team = team_create(name=options["name"], creator=user)
                self.stdout.write(f"team {team.slug} created ({team.name}), member: {user}")
            elif action == "agent-register":
                self._agent(user, options)
            else:
                new = api_token_create(user=user, name=options["name"])
                self.stderr.write(
                    f"token {new.token.name!r} for {user} created; the key is shown only now:"
                )
                self.stdout.write(new.key)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc

    def _user(self, username: str):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(
                f"no user {username!r} (create one with "
                f"`python manage.py accounts user-create {username}`)"
            )
        return user

    def _user_create(self, options) -> None:
        roles = [r for r in ("organiser", "reviewer") if options[r]]
        password = self._password(options["password_env"])
        try:
            user = user_create(
                username=options["username"],
                password=password,
                email=options["email"],
                roles=roles,
            )
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(
            f"user {user.username} created{' (' + ', '.join(roles) + ')' if roles else ''}"
        )

    def _role(self, action: str, options) -> None:
        user = self._user(options["username"])
        role = options["role"]
        try:
            if action == "role-add":
                user_role_add(user=user, role=role)
            else:
                user_role_remove(user=user, role=role)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        user.refresh_from_db()
        held = ", ".join(user_roles(user)) or "none"
        done = "is now" if action == "role-add" else "is no longer"
        self.stdout.write(f"{user.username} {done} {role} (roles: {held})")

    def _password(self, variable: str | None) -> str:
        if variable:
            password = os.environ.get(variable, "")
            if not password:
                raise CommandError(f"the environment variable {variable} is not set or empty")
            return password
        try:
            interactive = sys.stdin.isatty()
        except (AttributeError, OSError, ValueError):
            interactive = False
        if not interactive:
            raise CommandError(
                "no terminal to ask for the password on: give --password-env VAR "
                "(the name of a variable holding it)"
            )
        password = getpass.getpass("Password: ")
        if password != getpass.getpass("Password (again): "):
            raise CommandError("the two passwords differ; nothing created")
        return password

    def _team(self, user, slug: str | None) -> Team:
        teams = Team.objects.filter(members=user)
        if slug:
            team = teams.filter(slug=slug).first()
            if team is None:
                raise CommandError(f"{user} is not a member of a team {slug!r}")
            return team
        if teams.count() != 1:
            raise CommandError(f"{user} belongs to {teams.count()} teams: name one with --team")
        return teams.get()

    def _agent(self, user, options) -> None:
        family = options["model_family"] or model_family_guess(options["base_model"])
        agent = agent_register(
            user=user,
            team=self._team(user, options["team"]),
            name=options["name"],
            display_name=options["display_name"],
            base_model=options["base_model"],
            coding_agent=options["coding_agent"],
            scaffold=options["scaffold"],
            model_family=family,
            description=options["description"],
            links=options["links"],
        )
        self.stdout.write(f"agent {agent.name} registered for team {agent.team.slug} ({family})")
