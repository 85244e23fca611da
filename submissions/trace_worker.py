"""Reading a coding-agent trace in a child of `common.child_pool`
(`trace_read_budgeted`, run by `submissions.traces.trace_parse`) under an
address-space limit: a trace made to balloon (31.5 MB of `{}` grew a web worker
from 145 to 896 MB, issue 40) fails here, and the memory it took goes with the
child's, never the web worker's. Imports nothing that needs Django's settings or
apps (the child has none)."""

import json
from pathlib import Path
from typing import Any

from .traces import TraceLimits, trace_read


def _memory_limited(max_memory: int) -> tuple[int, int]:
    """Limit this process's address space to `max_memory`; the limits before."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = max_memory if hard == resource.RLIM_INFINITY else min(max_memory, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    return soft, hard


def _limits_restore(limits: tuple[int, int]) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, limits)


def trace_read_budgeted(
    data: bytes, reader: str, limits: TraceLimits, max_memory: int
) -> dict[str, Any]:
    """`trace_read` with at most `max_memory` bytes of address space (lifted
    again once it is done)."""
    before = _memory_limited(max_memory)
    try:
        return trace_read(data, reader, limits)
    except MemoryError:
        failure = f"not read: reading the trace needed more than {max_memory / 2**20:.0f} MiB"
    finally:
        _limits_restore(before)
    return {"note": failure}


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def trace_summary_budgeted(location: str, max_memory: int) -> tuple[float | None, float | None]:
    """(cost in USD, duration in ms) from the last message of the trace at
    `location` that gives either (`submissions.costs.trace_summary`), with at most
    `max_memory` bytes of address space; (None, None) when there is none or the
    file cannot be read within that."""
    before = _memory_limited(max_memory)
    try:
        data = json.loads(Path(location).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError, MemoryError):
        return None, None
    finally:
        _limits_restore(before)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        return None, None
    for message in reversed(data):
        if not isinstance(message, dict):
            continue
        cost = message.get("cost_usd", message.get("total_cost_usd"))
        duration = message.get("duration_ms")
        if cost is None and duration is None:
            continue
        return _number(cost), _number(duration)
    return None, None
