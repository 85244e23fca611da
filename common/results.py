"""The public results' caches, and the one way to say that they are stale.

What the public reads (each stage's board and judges' board, the judgment
lists, agents' pages, the export, the objective page, the agreement between
judges and reviewers) is cached under generations (`common.cache_generation`):

- the leaderboard's: one per stage, and one for the answers that span stages
  (`leaderboard/caching.py`);
- the agreement statistics': `AGREEMENT_GENERATION`, here (read by
  `reviews/selectors.py`).

`results_changed(stages, agreement=...)` is the one function that moves them
on. Every writer calls it at its event, with the stages whose results changed
(None: no stage in particular, so every stage) and whether the agreement's
inputs did (a judgment's scores, a submitted review, a released round):

- the services, at what they do: a judgment finished, re-queued or re-run
  (judging/services/), a judge activated or not, a panel made a default; a
  review submitted or edited, a round closed or released (reviews/services.py);
  an experiment run finished, cancelled or given up (experiments/runner.py,
  experiments/queue.py); a run stored as a submission (submissions/intake.py),
  its steps priced again (submissions/costs.py);
- the admin, for the rows its organisers save or delete:
  `common.results_admin.ResultsAdminMixin`, mixed into the `ModelAdmin`s of
  benchmark, submissions, judging and reviews.
  A reviewer's draft autosave, and rows no public answer reads (assignments),
  call nothing. No model signal is involved (a `post_delete` receiver of every
  model would turn off Django's fast deletes); a write in a shell, or a test's
  factory, says what it changed itself.

Once the current transaction commits (at once outside one), the agreement's
generation moves on when `agreement`, and each callable named in
`settings.RESULTS_CHANGED_HOOKS` (settings/wiring.py) is called with the
stages: the leaderboard's moves those stages' generations and the cross-stage
one on, and has a worker recompute those stages' boards.

Inside `common.bulk_writes.writes_deferred()` (`import_mlrbench`) nothing is
done per write: once, at the end of the block, every stage and the agreement
(the leaderboard's import part computes every board itself, and drops the
boards' part with `deferred_done(BOARDS_DEFERRED)`).
"""

import logging
from collections.abc import Iterable

from django.db import transaction

from .bulk_writes import deferred
from .cache_generation import CacheGeneration
from .hooks import setting_callables

logger = logging.getLogger(__name__)

AGREEMENT_GENERATION = CacheGeneration("reviews:agreement")
# The keys of what a bulk write leaves for its end (common.bulk_writes).
BOARDS_DEFERRED = "results.boards"
AGREEMENT_DEFERRED = "results.agreement"


def _hooks_call(stages: tuple[str, ...] | None) -> None:
    for hook in setting_callables("RESULTS_CHANGED_HOOKS"):
        try:
            hook(stages)
        except Exception as exc:  # a cache or broker outage: the write is done anyway
            logger.warning("results changed: %s failed (%r)", hook.__qualname__, exc)


def _after_commit(stages: tuple[str, ...] | None, agreement: bool) -> None:
    if agreement:
        AGREEMENT_GENERATION.bump()
    _hooks_call(stages)


def results_changed(stages: Iterable[str] | None = None, *, agreement: bool = False) -> None:
    """The results of `stages` (None: of every stage) changed, and the
    agreement's inputs too when `agreement`: make their cached answers stale
    once the current transaction commits (see the module docstring)."""
    changed = None if stages is None else tuple(dict.fromkeys(str(stage) for stage in stages))
    if changed == ():
        return
    in_bulk = deferred(BOARDS_DEFERRED, lambda: results_changed(None))
    if agreement:
        in_bulk = deferred(AGREEMENT_DEFERRED, AGREEMENT_GENERATION.bump) or in_bulk
    if in_bulk:
        return
    transaction.on_commit(lambda: _after_commit(changed, agreement), robust=True)
