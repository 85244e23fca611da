"""The MLR-Bench site's stand-in for MLRC-Bench's `MLAgentBench` package.

Task code imports `MLAgentBench.utils` (`save_evals`, `calculate_complexity`,
...), `MLAgentBench.constants` (`ALL_BASE_PERFORMANCE`, `ALL_BASE_RUNTIME`,
`MLR_BENCH_DIR`), and through them `MLAgentBench.LLM` and
`MLAgentBench.schema`. Each name means what it means upstream; the LLM calls
(`complete_text`, `summarize_code`, `get_llm_feedback`) are documented no-ops,
since a run has no network.
"""
