import sys
import time

from django.core.management.base import BaseCommand, CommandError
from django.db.models import QuerySet
from tqdm import tqdm

from judging.models import (
    Judge,
    JudgingCondition,
    Judgment,
    JudgmentKind,
    JudgmentStatus,
)
from judging.selectors import (
    JUDGE_ADD_HOSTED,
    active_judge_count,
    judgments_pending,
    pending_submissions,
)
from judging.services.queue import judgments_queue, judgments_queue_plan, judgments_resend_queued
from submissions.models import Stage, Submission, SubmissionStatus


def _interactive() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, OSError, ValueError):  # no stdin, or a closed one
        return False


class Command(BaseCommand):
    help = (
        "Queue submissions for the active judges: one submission, a whole stage (optionally "
        "one agent's), or everything pending: what the stage's default panel's judges have "
        "not scored (imported published submissions only with --include-imported), and "
        "any judgment left queued. --pending prints the judgments per judge and their "
        "estimated cost and asks first (--yes: do not ask). With --wait, show a progress "
        "bar until every queued judgment is done or failed."
    )

    def add_arguments(self, parser):
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--submission", type=int, help="submission id")
        target.add_argument("--stage", choices=Stage.values)
        target.add_argument("--pending", action="store_true")
        parser.add_argument("--agent", help="with --stage: only this agent's submissions")
        parser.add_argument("--judge", action="append", help="only this judge (repeatable)")
        parser.add_argument(
            "--condition", choices=JudgingCondition.values, default=JudgingCondition.WITH_CODE
        )
        parser.add_argument(
            "--kind",
            choices=JudgmentKind.values,
            action="append",
            help="only this kind of judgment (scores, or the hallucination review); default: both",
        )
        parser.add_argument("--force", action="store_true", help="judge again what is done already")
        parser.add_argument("--wait", action="store_true", help="show progress until finished")
        parser.add_argument(
            "--include-imported",
            action="store_true",
            help="with --pending: judge the imported published submissions too",
        )
        parser.add_argument(
            "--yes", action="store_true", help="with --pending: queue without asking"
        )
        parser.add_argument(
            "--timeout", type=float, default=None, help="with --wait: give up after seconds"
        )

    def handle(self, *args, **options):
        if options["pending"] and not options["judge"] and not active_judge_count():
            # Said first and alone: the plan and "skipped" lines would read as if
            # something were about to be judged.
            raise CommandError(
                "no judge is active: nothing would judge the pending submissions. Add one "
                f"({JUDGE_ADD_HOSTED}; docs/judging.md: Judging with a local model), "
                "then run this again"
            )
        submissions = self._submissions(options)
        judges = None
        if options["judge"]:
            judges = list(Judge.objects.filter(name__in=options["judge"]))
            unknown = set(options["judge"]) - {judge.name for judge in judges}
            if unknown:
                raise CommandError(f"no judge named {', '.join(sorted(unknown))}")
        if options["pending"]:
            self._confirm(submissions, judges, options)
            # Left queued by a run that stopped (with no broker, nothing else
            # sends them): sent again as they are, whichever judge and submission.
            resent = judgments_resend_queued(older_than=0)
            if resent:
                self.stdout.write(f"sent {len(resent)} judgment(s) left queued again")
            if not submissions:
                if not resent:
                    self.stdout.write(
                        "nothing to judge: every ready submission is scored by its stage's "
                        "default panel (imported published ones are left alone; "
                        "--include-imported judges them too)"
                    )
                return
        report = judgments_queue(
            submissions=submissions,
            judges=judges,
            condition=options["condition"],
            force=options["force"],
            resend_queued=options["pending"],
            kinds=options["kind"],
        )
        for reason in report.skipped:
            self.stderr.write(self.style.WARNING(f"skipped: {reason}"))
        self.stdout.write(
            f"queued {report.created} new and {report.requeued} again; "
            f"{report.unchanged} left as they were"
        )
        if options["wait"] and report.judgment_ids:
            self._wait(report.judgment_ids, options["timeout"])

    def _submissions(self, options) -> list[Submission]:
        if options["submission"] is not None:  # one named submission, a canary too
            submission = (
                Submission.objects.select_related("task", "agent")
                .filter(pk=options["submission"])
                .first()
            )
            if submission is None:
                raise CommandError(f"no submission {options['submission']}")
            return [submission]
        # A whole stage or everything pending: never the canaries, which
        # `judge_canaries run` reviews (after saying what it costs).
        queryset: QuerySet[Submission] = Submission.objects.select_related("task", "agent").public()
        if options["stage"]:
            queryset = queryset.filter(stage=options["stage"])
            if options["agent"]:
                queryset = queryset.filter(agent__name=options["agent"])
            queryset = queryset.filter(status=SubmissionStatus.READY)
        else:
            if options["agent"]:
                raise CommandError("--agent goes with --stage")
            queryset = pending_submissions(queryset, include_imported=options["include_imported"])
        submissions = list(queryset.order_by("pk"))
        # --pending may still have judgments left queued to send (handle says).
        if not submissions and not options["pending"]:
            raise CommandError("no submission to judge")
        return submissions

    def _confirm(self, submissions: list[Submission], judges, options) -> None:
        plans = judgments_queue_plan(
            submissions=submissions,
            judges=judges,
            condition=options["condition"],
            kinds=options["kind"],
        )
        total = sum(plan.judgments for plan in plans)
        self.stdout.write(f"{len(submissions)} submission(s) to judge:")
        for plan in plans:
            basis = "its own judgments so far" if plan.tokens_measured else "an assumed size"
            cost = (
                f"about ${plan.cost_usd:.4f}"
                if plan.cost_usd is not None
                else "unknown cost (no price: give the judge --input-price/--output-price)"
            )
            self.stdout.write(
                f"  {plan.judge}: {plan.judgments} judgment(s), {cost} "
                f"(~{plan.input_tokens_each} input + {plan.output_tokens_each} output tokens "
                f"each, from {basis})"
            )
        left = Judgment.objects.filter(status=JudgmentStatus.QUEUED).count()
        if left:
            self.stdout.write(f"  and {left} judgment(s) left queued, to be sent again")
        if (total == 0 and not left) or options["yes"]:
            return
        if not _interactive():
            raise CommandError("nothing queued: no terminal to confirm on (add --yes to queue)")
        try:
            answer = input(f"Queue {total} judgment(s)? [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            raise CommandError("nothing queued (run again with --yes to queue without asking)")

    def _wait(self, judgment_ids: list[int], timeout: float | None) -> None:
        started = time.monotonic()
        total = len(judgment_ids)
        with tqdm(total=total, unit="judgment", file=self.stderr._out, dynamic_ncols=True) as bar:
            while True:
                counts = judgments_pending(judgment_ids=judgment_ids)
                finished = counts[JudgmentStatus.DONE] + counts[JudgmentStatus.FAILED]
                bar.update(finished - bar.n)
                bar.set_postfix(
                    running=counts[JudgmentStatus.RUNNING],
                    queued=counts[JudgmentStatus.QUEUED],
                    failed=counts[JudgmentStatus.FAILED],
                    refresh=False,
                )
                if finished >= total:
                    break
                if timeout is not None and time.monotonic() - started > timeout:
                    raise CommandError(
                        f"gave up waiting after {timeout:g} s: {finished} of {total} finished"
                    )
                time.sleep(0.5)
        failed = Judgment.objects.filter(pk__in=judgment_ids, status=JudgmentStatus.FAILED)
        done = total - failed.count()
        self.stdout.write(f"{done} done, {failed.count()} failed")
        if failed:
            for judgment in failed.select_related("judge"):
                self.stderr.write(
                    f"  judgment {judgment.pk} (submission {judgment.submission_id}, "
                    f"{judgment.judge.name}): {judgment.error}"
                )
            raise CommandError(f"{failed.count()} judgment(s) failed")
