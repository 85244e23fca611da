"""Every write of the judging app, one module per concept: `rubrics`, `judges`,
`queue` (queueing, re-runs, resends and the reaper), `run` (running and
recording one judgment), `panels`, `canaries` (planted fabrications) and
`drift` (a judge's scores again, later). A submission's judging state is not
written anywhere: `judging.selectors.submission_judging_state` derives it from
the judgments. Import from the modules themselves; this package re-exports
nothing."""
