"""Experiment jobs: sandboxed runs of submitted code on `gpu` workers,
objective tasks scored against a baseline and a top human, and reproduction
checks of the numbers a paper reports.

`services` holds every write, `selectors` every read; the sandbox itself is
`benchmark.sandbox` and the Celery task `benchmark.tasks`.
"""
