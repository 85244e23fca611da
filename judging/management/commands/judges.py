import argparse
from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Count, Q, Sum

from benchmark.models import ModelFamily
from judging import services
from judging.models import Judge, JudgmentStatus


def _price(text: str) -> Decimal:
    # Only the conversion: what a price may be is the Judge model's rule (full_clean).
    try:
        return Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"not a number of dollars: {text!r}") from None


class Command(BaseCommand):
    help = (
        "Manage MLR-Judge judges: `add` one (any litellm model, optionally behind its own "
        "OpenAI-compatible api_base), `list` them with what they cost, `disable` or `enable` one."
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
        add.add_argument("--inactive", action="store_true", help="add it disabled")
        sub.add_parser("list", help="list the judges")
        for action in ("disable", "enable"):
            parser_ = sub.add_parser(action, help=f"{action} a judge")
            parser_.add_argument("name")

    def handle(self, *args, action: str, **options):
        try:
            getattr(self, f"_{action}")(**options)
        except services.JudgeError as exc:
            raise CommandError(str(exc)) from exc

    def _add(self, **options):
        judge = services.judge_create(
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
        )
        state = "active" if judge.is_active else "inactive"
        self.stdout.write(self.style.SUCCESS(f"added judge {judge.name} ({judge.model}, {state})"))
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

    def _disable(self, *, name: str, **options):
        services.judge_set_active(name=name, active=False)
        self.stdout.write(self.style.SUCCESS(f"disabled judge {name}: no new judgments"))

    def _enable(self, *, name: str, **options):
        services.judge_set_active(name=name, active=True)
        self.stdout.write(self.style.SUCCESS(f"enabled judge {name}"))
