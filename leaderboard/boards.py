"""The leaderboard page's boards, rendered to HTML: the ranking with its summary
and charts (`board_page_html`) and the objective tab's board
(`objective_board_html`). The page's view and the worker that warms the boards
ahead of visitors (`leaderboard.refresh`) both render through here, so neither
reaches into the other."""

from django.http import QueryDict
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString

from common.charts import cost_chart, heatmap, interval_chart, sparkline
from common.stats import MLRC_TRIALS
from experiments.analyses import TREND_SERIES, objective_analyses_of_tasks
from judging.models import JudgingCondition
from judging.subjective_objective import Correlation
from submissions.models import Stage

from .caching import cached, cached_stage
from .payloads import leaderboard_view
from .selectors.board import (
    ACCEPTANCE_LINE,
    Leaderboard,
    LeaderboardQuery,
    LeaderboardRow,
)
from .selectors.objective import OBJECTIVE_STAGE, objective_board_compute
from .serializers import (
    LeaderboardRowSerializer,
    ObjectiveLeaderboardRowSerializer,
    ObjectiveTaskResultSerializer,
)
from .tables import (
    OBJECTIVE_COLUMNS,
    OBJECTIVE_TASK_COLUMNS,
    OBJECTIVE_TASK_HIDDEN,
    STAGE_COLUMNS,
    page_columns,
)

# MLR-Bench evaluates the end-to-end stage on 10 of its tasks (the one stage listed).
BENCHMARK_TASKS: dict[str, int] = {Stage.END2END.value: 10}


def query_string(params: QueryDict, **changes: str | None) -> str:
    query = params.copy()
    for key, value in changes.items():
        if value is None:
            query.pop(key, None)
        else:
            query[key] = value
    return query.urlencode()


def sort_heading(key: str, label: str, params: QueryDict, sort: str, *, ascending_first=False):
    current = sort.lstrip("-") if sort else ""
    descending_now = sort.startswith("-")
    if current == key:
        next_sort = key if descending_now else f"-{key}"
        state = "descending" if descending_now else "ascending"
    else:
        next_sort = key if ascending_first else f"-{key}"
        state = ""
    return {
        "key": key,
        "label": label,
        "state": state,
        "url": "?" + query_string(params, sort=next_sort),
    }


def _acceptance_index(rows: list[LeaderboardRow], sort: str, overall_key: str) -> int | None:
    """Where the 6.0 line falls, when the rows are in Overall order."""
    if sort not in ("", "rank", f"-{overall_key}"):
        return None
    for i, row in enumerate(rows):
        if row.overall < ACCEPTANCE_LINE:
            return i
    return len(rows)


def _charts(board: Leaderboard, rows: list[LeaderboardRow]):
    agent_url = {r.agent: reverse("leaderboard:agent-detail", args=[r.agent]) for r in rows}
    overall = interval_chart(
        [(r.display_name or r.agent, agent_url[r.agent], r.overall, r.overall_ci) for r in rows],
        line=ACCEPTANCE_LINE,
    )
    heat = heatmap(
        [(r.display_name or r.agent, agent_url[r.agent]) for r in rows],
        [d.label for d in board.dimensions],
        [[r.scores.get(d.key) for d in board.dimensions] for r in rows],
    )
    return overall, heat


def _cost_chart(rows: list[LeaderboardRow]):
    """Cost against Overall for the agents with a cost; the others by name,
    listed beside the chart rather than placed at 0."""
    placed = [r for r in rows if r.cost_usd_per_task]
    chart = cost_chart(
        [
            (
                r.display_name or r.agent,
                reverse("leaderboard:agent-detail", args=[r.agent]),
                float(r.cost_usd_per_task or 0),
                r.overall,
                r.overall_ci,
                r.pareto_optimal,
                r.cost_unpriced_steps > 0,
            )
            for r in placed
        ],
        line=ACCEPTANCE_LINE,
    )
    return chart if placed else None, [r for r in rows if not r.cost_usd_per_task]


def canonical_params(query: LeaderboardQuery, sort: str = "") -> QueryDict:
    """The view as URL parameters, always written the same way, so that links
    and cached fragments do not depend on how a visitor spelled the URL."""
    params = QueryDict(mutable=True)
    params["stage"] = query.stage
    for name in ("conference", "year", "topic", "task", "judge"):
        value = getattr(query, name)
        if value:
            params[name] = str(value)
    if query.condition != JudgingCondition.WITH_CODE:
        params["condition"] = query.condition
    if query.exclude_same_family:
        params["exclude_same_family"] = "1"
    if query.common_tasks:
        params["common_tasks"] = "1"
    if query.fabrication_rule != "any":
        params["fabrication_rule"] = query.fabrication_rule
    if sort:
        params["sort"] = sort
    return params


def _header_columns(
    board: Leaderboard, params: QueryDict, sort: str
) -> tuple[list[dict], list[dict]]:
    """The table's headings: the columns the board has values for (the
    dimensions as one entry, `scores`) and the dimension headings."""
    headings = []
    for column in page_columns(LeaderboardRowSerializer(), STAGE_COLUMNS):
        if column.shown_if and not getattr(board, column.shown_if):
            continue
        heading = {"key": column.key, "column": column, "url": None, "state": ""}
        if column.sortable and column.key != "scores":
            heading |= sort_heading(
                column.key, column.label, params, sort, ascending_first=column.ascending_first
            )
        headings.append(heading)
    dimensions = [sort_heading(d.key, d.label, params, sort) for d in board.dimensions]
    return headings, dimensions


def board_page_html(
    query: LeaderboardQuery, sort: str, *, board: Leaderboard | None = None
) -> SafeString:
    """The ranking, its summary and its charts, rendered once per view and data
    version: the page's one cache layer (rendering a hundred rows and two
    charts costs more than ranking them), shortly after a write as it was.
    The same for every visitor (no request in it), so the worker's refresh
    renders it too, from the `board` it computed. The table shows the rows as
    the API serializes them. Raises UnknownSort for a column it cannot sort by."""

    def render_board() -> SafeString:
        view = leaderboard_view(query, sort, board=board)
        computed, rows = view.board, view.rows
        params = canonical_params(query, sort)
        download = query_string(params, format=None)
        api = reverse("api:leaderboard")
        columns, dimension_columns = _header_columns(computed, params, sort)
        serialized = LeaderboardRowSerializer(rows, many=True).data
        context = {
            "board": computed,
            # Each serialized row with whether it is at or above the acceptance line.
            "rows": [
                (data, row.overall >= ACCEPTANCE_LINE)
                for data, row in zip(serialized, rows, strict=True)
            ],
            "query": query,
            "stage_label": dict(Stage.choices)[query.stage],
            # The benchmark's own size: a site holding a sample says so.
            "benchmark_tasks": BENCHMARK_TASKS.get(query.stage),
            "condition_label": dict(JudgingCondition.choices)[query.condition],
            "acceptance_line": ACCEPTANCE_LINE,
            "columns": columns,
            "dimension_columns": dimension_columns,
            "line_index": _acceptance_index(rows, sort, computed.overall_key),
            "shows_fabrication": any(c["key"] == "fabrication" for c in columns),
            "csv_url": f"{api}?{download}&format=csv",
            "json_url": f"{api}?{download}&format=json",
        }
        if rows:
            context["overall_chart"], context["heatmap"] = _charts(computed, rows)
            context["cost_chart"], context["without_cost"] = _cost_chart(rows)
            context["lower_bound_rows"] = [
                r for r in rows if r.cost_unpriced_steps and r.cost_usd_per_task
            ]
            context["compare_url"] = reverse("leaderboard:compare") + "?" + download
        return render_to_string("leaderboard/_board.html", context)

    return cached_stage(query.stage, "page", (query, sort), render_board, recent=True)


# The small scatter of the judges' score (x, 1-10) against the relative
# improvement (y, %): the plot's box inside a 240 x 140 figure, room for the ticks.
SCATTER_LEFT, SCATTER_RIGHT, SCATTER_TOP, SCATTER_BOTTOM = 44, 232, 8, 108


def subjective_objective_panel(correlations: list[Correlation]) -> list[dict]:
    """The judges' opinion against the real result, per dimension and condition,
    with a small scatter plot (judges' mean score, relative improvement) and its
    axes: score ticks below, improvement ticks on the left."""
    panel = []
    width, height = SCATTER_RIGHT - SCATTER_LEFT, SCATTER_BOTTOM - SCATTER_TOP
    for correlation in correlations:
        points = correlation.points
        ys = [y for _, y in points] or [0.0]
        low, high = min(ys + [0.0]), max(ys + [100.0])
        span = (high - low) or 1.0

        def sx(score: float) -> float:
            return round(SCATTER_LEFT + (score - 1) / 9 * width, 1)

        def sy(improvement: float, low: float = low, span: float = span) -> float:
            return round(SCATTER_BOTTOM - (improvement - low) / span * height, 1)

        dots = [{"cx": sx(x), "cy": sy(y), "x": x, "y": y} for x, y in points]
        y_values = sorted({low, 0.0, high})
        panel.append(
            {
                "c": correlation,
                "dots": dots,
                "x_ticks": [(sx(score), score) for score in (1, 4, 7, 10)],
                "y_ticks": [(sy(value), f"{value:.0f}%") for value in y_values],
            }
        )
    return panel


def objective_analyses_panel(answer: dict) -> dict:
    """One task's analyses (`objective_analyses`) with a sparkline per agent and
    trend series (one line per trial over its dev runs)."""
    agents = []
    for agent in answer["agents"]:
        steps = agent["trend"]["steps"]
        trials = sorted({step["trial"] for step in steps})
        agents.append(
            {
                "a": agent,
                "trend": [
                    (
                        key,
                        agent["trend"]["series"][key],
                        sparkline(
                            [[s[key] for s in steps if s["trial"] == trial] for trial in trials]
                        ),
                    )
                    for key in TREND_SERIES
                ],
            }
        )
    return {"answer": answer, "agents": agents}


def objective_board_html(idea_source: str) -> SafeString:
    """The objective tab's board for a configuration filter ('' for all), cached."""

    def render_board() -> SafeString:
        api = reverse("api:leaderboard")
        board = objective_board_compute(idea_source=idea_source or None)
        rows = ObjectiveLeaderboardRowSerializer(board.rows, many=True).data
        # One column group per objective task; an agent not evaluated on a task gets a gap.
        tasks = sorted(
            {
                (c["task"], c["title"], c["metric"], c["higher_is_better"])
                for r in rows
                for c in r["tasks"]
            }
        )
        task_columns = page_columns(
            ObjectiveTaskResultSerializer(), OBJECTIVE_TASK_COLUMNS, hidden=OBJECTIVE_TASK_HIDDEN
        )
        download = f"{api}?stage={OBJECTIVE_STAGE}" + (
            f"&idea_source={idea_source}" if idea_source else ""
        )
        analyses = objective_analyses_of_tasks(
            slugs=[t[0] for t in tasks], idea_source=idea_source or None
        )
        return render_to_string(
            "leaderboard/_objective_board.html",
            {
                "board": board,
                "tasks": tasks,
                "columns": page_columns(
                    ObjectiveLeaderboardRowSerializer(),
                    OBJECTIVE_COLUMNS,
                    hidden=frozenset({"best_of_k", "mlrc_pass_at_k"}),
                ),
                "task_columns": task_columns,
                "rows": [
                    (row, [{c["task"]: c for c in row["tasks"]}.get(t[0]) for t in tasks])
                    for row in rows
                ],
                "csv_url": f"{download}&format=csv",
                "json_url": f"{download}&format=json",
                "analyses": [objective_analyses_panel(answer) for answer in analyses],
                "correlations": subjective_objective_panel(board.subjective_objective),
                "mlrc_ks": list(range(1, MLRC_TRIALS + 1)),
                "best_of_k_ks": list(
                    range(1, max((len(r["best_of_k"]) for r in rows), default=0) + 1)
                ),
            },
        )

    return cached("objective-page", (idea_source,), render_board)
