"""The agreement statistics are cached per (stage, judge) under a generation
number (`common.cache_generation`); any write that can change them (a review
submitted or edited, a judgment or one of its scores saved or deleted) moves
the generation on, so every cached entry is stale at once."""

from common.cache_generation import CacheGeneration

AGREEMENT_GENERATION = CacheGeneration("reviews:agreement")
# A safety net for writes that bypass signals (bulk updates): entries expire anyway.
ENTRY_TIMEOUT_SECONDS = 60 * 60
