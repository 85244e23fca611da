"""The agreement statistics are cached per (stage, judge) under a generation
number (`common.cache_generation`), `common.results.AGREEMENT_GENERATION`:
`common.results.results_changed(..., agreement=True)`, called by every write
that can change them (a review submitted or edited, a round released, a
judgment finished or one of its scores saved or deleted), moves it on, so every
cached entry is stale at once."""

from common.results import AGREEMENT_GENERATION

__all__ = ["AGREEMENT_GENERATION", "ENTRY_TIMEOUT_SECONDS"]

# A safety net for writes that say nothing (a `QuerySet.update` in a shell): entries expire anyway.
ENTRY_TIMEOUT_SECONDS = 60 * 60
