"""Signals other apps listen to, so that `submissions` never imports them.

`submission_ready` is sent (after the transaction commits) when a
submission's intake has finished and its artifacts are in place; the judging
app queues its judges on it. Arguments: `submission_id`.
Runs loaded by `import_mlrbench` do not send it: their published judge
reviews are imported by the judging part instead of being run again.
"""

from django.dispatch import Signal

submission_ready = Signal()
