import argparse
from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import Count, Q, Sum

from benchmark.models import ModelFamily
from common.errors import ValidationFailed
from common.llm import usage_line
from judging.models import Judge, JudgePanel, JudgmentStatus
from judging.rubrics import DEFAULT_RUBRICS
from judging.selectors import panels_list
from judging.services.judges import JudgeAdded, judge_check, judge_create, judge_set_active
from judging.services.panels import panel_create, panel_default_set


def _price(text: str) -> Decimal:
    # Only the conversion: what a price may be is the Judge model's rule (full_clean).
    try:
        return Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"not a number of dollars: {text!r}") from None


class Command(BaseCommand):
    help = (
        "Manage MLR-Judge judges: `add` one (any litellm model, optionally behind its own "
        "OpenAI-compatible api_base), `check` one with a small call, `list` them with what "
        "they cost, `disable` or `enable` one; `panel create|default|list` the judge panels "
        "whose mean the boards show."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="add an active judge")
        add.add_argument("--name", required=True, help="e.g. claude-3-7-sonnet-20250219")
        add.add_argument("--model", required=True, help="litellm model string, e.g. openai/gpt-4o")
        add.add_argument("--api-base", default="", help="OpenAI-compatible server URL")
        add.add_argument(
            "--api-key-env",
            default="",
            help="name of the environment variable with the key (the key itself is never stored)",
        )
        add.add_argument("--family", default=ModelFamily.OTHER, choices=ModelFamily.values)
        add.add_argument("--rpm", type=int, default=60, help="requests per minute, all workers")
        add.add_argument("--temperature", type=float, default=0.0)
        add.add_argument("--max-tokens", type=int, default=4096)
        add.add_argument("--timeout", type=float, default=120.0, help="seconds per call")
        for kind in ("input", "output"):
            add.add_argument(
                f"--{kind}-price",
                type=_price,
                default=None,
                metavar="USD",
                help=f"USD per million {kind} tokens, for a model litellm's price table lacks "
                "(give both prices or neither)",
            )
        add.add_argument(
            "--panel",
            default="",
            metavar="NAME",
            help="also make a new judge panel NAME of this judge: the pages of what it judges "
            "show that panel's score (the boards keep their default panel)",
        )
        add.add_argument("--inactive", action="store_true", help="add it disabled")
        add.add_argument(
            "--no-check",
            action="store_true",
            help="add it without first calling its model once (`judges check`)",
        )
        sub.add_parser("list", help="list the judges")
        check = sub.add_parser("check", help="call a judge's model once; print the usage")
        check.add_argument("name")
        panel = sub.add_parser("panel", help="judge panels: the judges a board's mean is over")
        panel_sub = panel.add_subparsers(dest="panel_action", required=True)
        create = panel_sub.add_parser("create", help="a new panel of the named judges")
        create.add_argument("panel_name", metavar="NAME")
        create.add_argument("--judge", action="append", required=True, metavar="JUDGE")
        create.add_argument("--description", default="")
        default = panel_sub.add_parser("default", help="make a panel the boards' default")
        default.add_argument("panel_name", metavar="NAME")
        default.add_argument(
            "--stage", action="append", choices=list(DEFAULT_RUBRICS), help="default: every stage"
        )
        panel_sub.add_parser("list", help="list the panels")
        for action in ("disable", "enable"):
            parser_ = sub.add_parser(action, help=f"{action} a judge")
            parser_.add_argument("name")

    def handle(self, *args, action: str, **options):
        try:
            getattr(self, f"_{action}")(**options)
        except ValidationFailed as exc:
            raise CommandError(str(exc)) from exc

    def _add(self, **options):
        panel_name = options["panel"]
        if panel_name and JudgePanel.objects.filter(name=panel_name).exists():
            # Checked first: nothing is added when the panel cannot be made.
            raise CommandError(
                f"a panel named {panel_name!r} exists already, and a panel's judges are fixed: "
                "name a new one"
            )
        with transaction.atomic():
            added = self._judge_create(options)
            if panel_name:
                panel_create(name=panel_name, judges=[added.judge.name])
        self._added_say(added, panel_name)

    def _judge_create(self, options) -> JudgeAdded:
        return judge_create(
            name=options["name"],
            model=options["model"],
            api_base=options["api_base"],
            api_key_env=options["api_key_env"],
            model_family=options["family"],
            requests_per_minute=options["rpm"],
            temperature=options["temperature"],
            max_tokens=options["max_tokens"],
            timeout_seconds=options["timeout"],
            input_usd_per_mtok=options["input_price"],
            output_usd_per_mtok=options["output_price"],
            is_active=not options["inactive"],
            check=not options["no_check"],
        )

    def _added_say(self, added: JudgeAdded, panel_name: str) -> None:
        judge = added.judge
        if added.check is not None:
            self.stdout.write(f"checked: {usage_line(added.check)}")
        state = "active" if judge.is_active else "inactive"
        self.stdout.write(self.style.SUCCESS(f"added judge {judge.name} ({judge.model}, {state})"))
        if panel_name:
            self.stdout.write(
                f"{judge.name} makes the panel {panel_name}: each submission it judges shows "
                f"that panel's score on its page; the default boards do not change. Rank by it "
                f"at /leaderboard/?panel={panel_name} (or make it the default: "
                f"`python manage.py judges panel default {panel_name}`)."
            )
        else:
            self.stdout.write(
                f"{judge.name} is in no panel, so no board's scores change. To rank by it: "
                f"`python manage.py judges panel create {judge.name}-panel --judge {judge.name}` "
                f"and see /leaderboard/?panel={judge.name}-panel (or make it the default: "
                f"`python manage.py judges panel default {judge.name}-panel`)."
            )
        if judge.api_key_env:
            import os

            if not os.environ.get(judge.api_key_env):
                self.stderr.write(
                    self.style.WARNING(
                        f"{judge.api_key_env} is not set here; the judge workers need it"
                    )
                )

    def _list(self, **options):
        judges = Judge.objects.annotate(
            done=Count("judgments", filter=Q(judgments__status=JudgmentStatus.DONE)),
            failed=Count("judgments", filter=Q(judgments__status=JudgmentStatus.FAILED)),
            cost=Sum("judgments__cost_usd", filter=Q(judgments__imported=False)),
            unpriced=Count(
                "judgments",
                filter=Q(
                    judgments__imported=False,
                    judgments__cost_usd__isnull=True,
                    judgments__status=JudgmentStatus.DONE,
                ),
            ),
        ).order_by("name")
        if not judges:
            self.stdout.write("no judges (add one with `judges add`)")
            return
        header = (
            f"{'name':32} {'model':40} {'family':10} {'rpm':>5} {'active':6} "
            f"{'price in/out per Mtok':22} {'done':>5} {'failed':>6}  cost"
        )
        self.stdout.write(header)
        for judge in judges:
            cost = f"${judge.cost:.4f}" if judge.cost is not None else "-"
            if judge.unpriced:
                cost += f" (+{judge.unpriced} unpriced)"
            own_price = judge.own_price
            price = (
                f"${own_price[0].normalize():f}/${own_price[1].normalize():f}"
                if own_price is not None
                else "litellm's table"
            )
            self.stdout.write(
                f"{judge.name:32} {judge.model:40} {judge.model_family:10} "
                f"{judge.requests_per_minute:>5} {'yes' if judge.is_active else 'no':6} "
                f"{price:22} {judge.done:>5} {judge.failed:>6}  {cost}"
            )

    def _check(self, *, name: str, **options):
        judge = Judge.objects.filter(name=name).first()
        if judge is None:
            raise CommandError(f"no judge named {name!r}")
        self.stdout.write(self.style.SUCCESS(f"{name}: {usage_line(judge_check(judge=judge))}"))

    def _panel(self, *, panel_action: str, **options):
        if panel_action == "create":
            panel = panel_create(
                name=options["panel_name"],
                judges=options["judge"],
                description=options["description"],
            )
            judges = ", ".join(sorted(j.name for j in panel.judges.all()))
            self.stdout.write(self.style.SUCCESS(f"created panel {panel.name} ({judges})"))
            self.stdout.write(
                f"see it at /leaderboard/?panel={panel.name}; make it the default with "
                f"`python manage.py judges panel default {panel.name}`"
            )
        elif panel_action == "default":
            defaults = panel_default_set(name=options["panel_name"], stages=options["stage"])
            stages = ", ".join(d.stage for d in defaults)
            self.stdout.write(
                self.style.SUCCESS(f"{options['panel_name']} is the default panel of {stages}")
            )
        else:
            panels = panels_list()
            if not panels:
                self.stdout.write("no panels (create one with `judges panel create`)")
            for listing in panels:
                default = ", ".join(listing.default_for) or "no stage"
                judges = ", ".join(listing.judges)
                self.stdout.write(f"{listing.name:24} judges: {judges:60} default for: {default}")

    def _disable(self, *, name: str, **options):
        judge_set_active(name=name, active=False)
        self.stdout.write(self.style.SUCCESS(f"disabled judge {name}: no new judgments"))

    def _enable(self, *, name: str, **options):
        judge_set_active(name=name, active=True)
        self.stdout.write(self.style.SUCCESS(f"enabled judge {name}"))
