"""Experiment jobs: sandboxed runs of submitted code on `gpu` workers,
objective tasks scored against a baseline and a top human, and reproduction
checks of the numbers a paper reports.

Writes by concept: `queue` (queue, cancel, re-run), `runner` (a worker
executing a run), `results` (objective results, reproduction checks) and
`objective_tasks` (defining one); reads in `selectors`; the sandbox in
`sandbox`, GPU slots in `slots`, the Celery task in `tasks`.
"""
