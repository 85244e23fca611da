"""How the apps reach the ones above them without importing them, in one place.

Arrows point one way (benchmark <- submissions <- experiments <- judging <-
reviews <- leaderboard, submissions <- experiments <- agent_runs; docs/architecture.md "The app
arrows"): where a lower app must call code of a higher one, it does so
through one of three means, all listed here.

1. Dotted-path lists (the settings below): the lower app imports each named
   callable when first used.

   | setting                      | read by                  | filled by           |
   | ---------------------------- | ------------------------ | ------------------- |
   | SUBMISSION_VISIBILITY_HOOKS  | submissions/visibility.py| reviews             |
   | SUBMISSION_OMISSION_HOOKS    | submissions/visibility.py| reviews             |
   | SUBMISSION_PAGE_PANELS       | submissions/page_panels  | experiments, judging|
   | TASK_PAGE_PANELS             | benchmark/page_panels.py | experiments         |
   | SUBMISSION_NOTICES           | submissions/page_panels  | judging             |
   | SUBMISSION_SUMMARY           | submissions/page_panels  | judging, reviews    |
   | SUBMISSION_INTAKE_CHECKS     | submissions/intake.py    | experiments         |
   | RESULTS_CHANGED_HOOKS        | common/results.py        | leaderboard         |

2. Registries in the lower apps, filled from the higher apps' `AppConfig.ready()`:

   | registry                                    | registered from (apps.py)            |
   | ------------------------------------------- | ------------------------------------ |
   | benchmark.mlrbench_import                   | `import_mlrbench`'s parts, in order: |
   | .import_part_register                       | benchmark "tasks" 10; submissions    |
   |                                             | "runs" 20; judging "reviews" 30;     |
   |                                             | reviews "human scores" 40,           |
   |                                             | "hallucination check" 45;            |
   |                                             | leaderboard "leaderboard" 90         |
   | submissions.states.submission_state_register| judging: a submission's judging      |
   |                                             | state (pages, API, admin)            |
   | benchmark.accounts.user_role_register       | reviews: the "reviewer" role         |

   (judging's `ready()` also imports `judging/checks.py`, Django system checks
   of its settings.)

3. Signals, connected in `ready()`:

   | signal (sent by)                              | received by                          |
   | --------------------------------------------- | ------------------------------------ |
   | submissions.signals.submission_ready          | experiments/receivers.py (queue a    |
   | (submissions/intake.py, after commit)         | dev or reproduction run);            |
   |                                               | judging/receivers.py (queue judging) |
   | post_save, post_delete: judging.Rubric        | judging/receivers.py (its own cached |
   |                                               | rubrics; within the app)             |

Elsewhere in the settings, by name only: the Celery routes by task name
(celery.py), the submissions' upload handler, benchmark's API token
authentication and the models named by the API schema's enums (base.py).
"""

# Hooks that hide submissions from one user on the pages that name agents
# (submissions/visibility.py): a reviewer does not see the papers they have not
# reviewed yet, anywhere on the site, until their own review is in.
SUBMISSION_VISIBILITY_HOOKS = ["reviews.blind.submissions_pending_review_by"]
# Left out of every page for everyone (anonymous visitors too) but organisers: every
# run of a task with a paper in an open blind review round (submissions/visibility.py,
# docs/reviews.md "Blind against the public site too").
SUBMISSION_OMISSION_HOOKS = ["reviews.blind.submissions_under_open_review"]

# Panels other apps add to the submission page (submissions/page_panels.py) and
# the task page (benchmark/page_panels.py).
SUBMISSION_PAGE_PANELS = [
    "experiments.panels.experiment_runs_panel",
    "judging.panels.judgments_panel",
]
TASK_PAGE_PANELS = ["experiments.panels.objective_results_panel"]
SUBMISSION_NOTICES = ["judging.selectors.judging_notices"]
SUBMISSION_SUMMARY = [
    "judging.panels.judging_summary",
    "reviews.panels.human_review_summary",
]
# Checks other apps make of an upload before it becomes a submission (see
# submissions/intake.py): an MLRC-Bench method archive's layout and read-only files.
SUBMISSION_INTAKE_CHECKS = ["experiments.intake.method_archive_problem"]
# Called after the commit of every write that changed public results, with the
# stages it changed (None: every stage), by `common.results.results_changed`:
# the leaderboard's boards and answers made stale, and recomputed by a worker.
RESULTS_CHANGED_HOOKS = ["leaderboard.caching.boards_changed"]
