"""Every non-trivial read of the leaderboard app, one module per concept:
`counting` (which submission counts), `board` (a stage's ranking and sort),
`compare` (two agents side by side), `objective` (the objective tasks' board),
`results` (an agent's, a task's and a submission's results), `fabrication`
(the fabrication page and columns) and `judges` (the judges' board). Import
from the modules themselves; this package re-exports nothing."""
