"""The MLR-Bench site's stand-in for MLRC-Bench's `MLAgentBench` package.

A task's `main.py` imports `MLAgentBench.utils.save_evals` (and sometimes
`MLAgentBench.constants`). Upstream, `save_evals` also asks an LLM to summarise
the method; here it only records the score, with no network and no LLM call, so
`main.py` runs unchanged inside the sandbox.
"""
