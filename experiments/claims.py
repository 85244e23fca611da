"""The claims rules live in `common.claims` (intake's provenance ledger in
`submissions` reads them too, and `submissions` may not import this app)."""

from common.claims import (
    NUMBER_RE,
    TEXT_SUFFIXES,
    ClaimCheck,
    Number,
    claims_check,
    numbers_in,
    paper_claims,
    results_claims,
)

__all__ = [
    "NUMBER_RE",
    "TEXT_SUFFIXES",
    "ClaimCheck",
    "Number",
    "claims_check",
    "numbers_in",
    "paper_claims",
    "results_claims",
]
