from django.core.management.base import BaseCommand, CommandError

from common.errors import ApplicationError
from leaderboard.releases import release_create, release_withdraw


class Command(BaseCommand):
    help = (
        "Releases: `create NAME [--notes TEXT]` freezes the leaderboards; "
        "`withdraw NAME --reason TEXT` marks one withdrawn."
    )

    def add_arguments(self, parser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="Freeze every stage's leaderboard now.")
        create.add_argument("name")
        create.add_argument("--notes", default="")
        withdraw = actions.add_parser("withdraw", help="Mark a release withdrawn.")
        withdraw.add_argument("name")
        withdraw.add_argument("--reason", required=True)

    def handle(self, *args, **options) -> None:
        try:
            if options["action"] == "create":
                release = release_create(name=options["name"], notes=options["notes"])
                self.stdout.write(
                    f"release {release.name}: sha256 {release.content_sha256}, "
                    f"{len(bytes(release.content))} bytes"
                )
            else:
                release = release_withdraw(name=options["name"], reason=options["reason"])
                self.stdout.write(f"release {release.name} withdrawn")
        except ApplicationError as exc:
            raise CommandError(str(exc)) from exc
