"""Signals other apps listen to, so that `judging` never imports them.

`judgment_finished` is sent once a judge run's outcome (done or failed) and its
scores are committed. The run writes with `update()` and `bulk_create()`, which
send no model signals, so this is how the leaderboard learns that its cached
results are stale. Arguments: `judgment_id`, `submission_id`, `status`.
"""

from django.dispatch import Signal

judgment_finished = Signal()
