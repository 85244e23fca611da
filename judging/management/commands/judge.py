import time

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from benchmark.models import Stage, Submission, SubmissionStatus
from judging import services
from judging.models import (
    Judge,
    JudgingCondition,
    Judgment,
    JudgmentKind,
    JudgmentStatus,
    SubmissionJudgingState,
)
from judging.selectors import judgments_pending, submission_judging_state_expression


class Command(BaseCommand):
    help = (
        "Queue submissions for the active judges: one submission, a whole stage (optionally "
        "one agent's), or everything pending (ready or judging, with a judge that has not "
        "finished or that failed). With --wait, show a progress bar until every queued "
        "judgment is done or failed."
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
            "--timeout", type=float, default=None, help="with --wait: give up after seconds"
        )

    def handle(self, *args, **options):
        submissions = self._submissions(options)
        judges = None
        if options["judge"]:
            judges = list(Judge.objects.filter(name__in=options["judge"]))
            unknown = set(options["judge"]) - {judge.name for judge in judges}
            if unknown:
                raise CommandError(f"no judge named {', '.join(sorted(unknown))}")
        report = services.judgments_queue(
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
        queryset = Submission.objects.select_related("task", "agent")
        if options["submission"] is not None:  # one named submission, a canary too
            submission = queryset.filter(pk=options["submission"]).first()
            if submission is None:
                raise CommandError(f"no submission {options['submission']}")
            return [submission]
        # A whole stage or everything pending: never the canaries, which
        # `judge_canaries run` reviews (after saying what it costs).
        queryset = queryset.public()
        if options["stage"]:
            queryset = queryset.filter(stage=options["stage"])
            if options["agent"]:
                queryset = queryset.filter(agent__name=options["agent"])
            queryset = queryset.filter(status=SubmissionStatus.READY)
        else:
            if options["agent"]:
                raise CommandError("--agent goes with --stage")
            queryset = queryset.annotate(
                judging_state=submission_judging_state_expression()
            ).filter(
                judging_state__in=[SubmissionJudgingState.READY, SubmissionJudgingState.JUDGING]
            )
        submissions = list(queryset.order_by("pk"))
        if not submissions:
            raise CommandError("no submission to judge")
        return submissions

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
