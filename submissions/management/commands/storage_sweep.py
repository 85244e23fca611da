"""Remove staged upload objects that no intake will move any more (left by a
crash or a storage outage mid-upload):

    python manage.py storage_sweep                    # staged more than a day ago
    python manage.py storage_sweep --older-than 6h    # or 30m, 2d, 3600 (seconds)
"""

import re
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError

from common.storage import staged_sweep, storage_errors

UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def age_parse(text: str) -> timedelta:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if match is None:
        raise CommandError(f"--older-than {text!r}: give a number with s, m, h or d (e.g. 12h)")
    return timedelta(seconds=float(match[1]) * UNITS[match[2]])


class Command(BaseCommand):
    help = "Remove staged upload objects older than a day (or --older-than)."

    def add_arguments(self, parser):
        parser.add_argument("--older-than", default="1d", help="an age: 3600, 30m, 12h, 2d")

    def handle(self, *args, older_than: str, **options):
        age = age_parse(older_than)
        try:
            removed = staged_sweep(older_than=age)
        except storage_errors() as exc:
            raise CommandError(f"the artifact store cannot be reached: {exc}") from exc
        self.stdout.write(f"{removed} staged objects older than {age} removed")
