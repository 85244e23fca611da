"""The boards a visitor lands on, computed ahead of the visitor: after a write
(the worker's `leaderboard.boards_refresh`, for the stages it changed) and at
the end of `import_mlrbench` (every stage). Each stage's board is computed
once and every answer made of it is stored: the API's payload, the page's
board and the judges' board, so that the first request costs a cache read."""

from collections.abc import Iterable

from common.cache_generation import fresh_reads, generations_pinned

from .boards import board_page_html
from .caching import DATA_GENERATION, generations_bump, stage_generation, stages_or_all
from .payloads import judge_board_payload, leaderboard_payload
from .selectors.board import LeaderboardQuery, leaderboard_compute


def boards_warm(stages: Iterable[str]) -> int:
    """Compute and store the default answers of `stages` for the data as it
    is now; returns how many stages."""
    done = 0
    with fresh_reads():
        for stage in stages:
            with generations_pinned(DATA_GENERATION, stage_generation(stage)):
                _stage_warm(stage)
            done += 1
    return done


def _stage_warm(stage: str) -> None:
    judge_board_payload(stage=stage)
    query = LeaderboardQuery(stage=stage)
    board = leaderboard_compute(query)
    leaderboard_payload(query, board=board)
    board_page_html(query, "", board=board)


def boards_after_import() -> int:
    """After a bulk write that sent no signals (an import): every answer made
    stale at once and every stage's boards computed now; returns how many."""
    generations_bump()
    return boards_warm(stages_or_all(None))
