"""Public pages: the leaderboard, an agent, a task's results, a submission's judgments."""

from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, reverse
from django.utils.safestring import mark_safe

from benchmark.models import Agent, Task
from common.cache_generation import served_stale
from common.errors import ApplicationError, ErrorItem, ValidationFailed, form_add_errors
from common.stats import MLRC_TRIALS
from experiments.analyses import TREND_SERIES, objective_analyses_of_tasks
from judging.models import HallucinationType, JudgingCondition
from judging.selectors import stage_scores
from judging.subjective_objective import Correlation
from submissions.models import Stage, Submission
from submissions.visibility import submissions_visible_to, task_hidden_from, unseen_submission_ids

from .caching import cached, cached_stage
from .charts import ShareChart, cost_chart, heatmap, interval_chart, share_chart, sparkline
from .forms import (
    BOARD_CHOICES,
    STAGE_CHOICES,
    AgentCompareForm,
    LeaderboardQueryForm,
    ObjectiveQueryForm,
)
from .payloads import agent_stage_summaries, judge_board_payload, leaderboard_payload
from .provenance_detection import RULE_TEXT as PROVENANCE_RULE
from .provenance_detection import provenance_by_agent, provenance_detection
from .releases import (
    UnknownRelease,
    release_bibtex,
    release_data,
    release_get,
    releases_diff,
    releases_list,
)
from .selectors.board import (
    ACCEPTANCE_LINE,
    Leaderboard,
    LeaderboardQuery,
    LeaderboardRow,
    leaderboard_compute,
    leaderboard_sort,
)
from .selectors.compare import UnknownAgent, agents_compare
from .selectors.fabrication import (
    FABRICATION_STAGES,
    RULES,
    SOURCE_HUMAN,
    SOURCE_JUDGES,
    SOURCE_REPRODUCTION,
    FabricationQuery,
    FabricationReport,
    fabrication_query_parse,
    fabrication_report,
)
from .selectors.objective import OBJECTIVE_STAGE, objective_board_compute
from .selectors.results import agent_task_results, submission_judgments, task_results
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


def _query_string(params: QueryDict, **changes: str | None) -> str:
    query = params.copy()
    for key, value in changes.items():
        if value is None:
            query.pop(key, None)
        else:
            query[key] = value
    return query.urlencode()


def _column(key: str, label: str, params: QueryDict, sort: str, *, ascending_first=False):
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
        "url": "?" + _query_string(params, sort=next_sort),
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
            heading |= _column(
                column.key, column.label, params, sort, ascending_first=column.ascending_first
            )
        headings.append(heading)
    dimensions = [_column(d.key, d.label, params, sort) for d in board.dimensions]
    return headings, dimensions


def board_page_html(query: LeaderboardQuery, sort: str, *, board: Leaderboard | None = None) -> str:
    """The ranking, its summary and its charts, rendered once per view and data
    version: the page's one cache layer (rendering a hundred rows and two
    charts costs more than ranking them), shortly after a write as it was.
    The same for every visitor (no request in it), so the worker's refresh
    renders it too, from the `board` it computed. The table shows the rows as
    the API serializes them. Raises UnknownSort for a column it cannot sort by."""

    def render_board() -> str:
        computed = board or leaderboard_compute(query)
        rows = leaderboard_sort(computed, sort) if sort else computed.rows
        params = canonical_params(query, sort)
        download = _query_string(params, format=None)
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


def _objective_board_html(request: HttpRequest, idea_source: str) -> str:
    def render_board() -> str:
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
            request=request,
        )

    return cached("objective-page", (idea_source,), render_board)


def _objective_filter(request: HttpRequest) -> str:
    """The objective tab's configuration filter; raises ValueError for a bad one."""
    objective_form = ObjectiveQueryForm(request.GET)
    if not objective_form.is_valid():
        raise ValueError(" ".join(str(e) for e in objective_form.errors.get("idea_source", [])))
    return objective_form.cleaned_data["idea_source"]


# MLR-Bench evaluates the end-to-end stage on 10 of its tasks (the one stage listed).
BENCHMARK_TASKS: dict[str, int] = {Stage.END2END.value: 10}


def leaderboard_view(request: HttpRequest) -> HttpResponse:
    form = LeaderboardQueryForm(request.GET)
    status = 200
    sort = ""
    board_html = ""
    if form.is_valid():
        query = form.leaderboard_query()
        if query.task and task_hidden_from(user=request.user, slug=query.task):
            raise Http404("No such task.")
        sort = form.cleaned_data.get("sort") or ""
        try:
            if query.stage == OBJECTIVE_STAGE:
                board_html = _objective_board_html(request, _objective_filter(request))
            else:
                board_html = board_page_html(query, sort)
        except ValueError as exc:
            form.add_error(None, str(exc))
            status = 400
    else:
        query = LeaderboardQuery()
        status = 400
    params = canonical_params(query)
    context = {
        "form": form,
        "query": query,
        "board_html": mark_safe(board_html),  # noqa: S308 - our own template's output
        "stale": served_stale(),
        "stage_label": dict(BOARD_CHOICES)[query.stage],
        "is_objective": query.stage == OBJECTIVE_STAGE,
        "stage_tabs": [
            (value, label, "?" + _query_string(params, stage=value))
            for value, label in BOARD_CHOICES
        ],
    }
    return render(request, "leaderboard/leaderboard.html", context, status=status)


def _agent_links(agent: Agent) -> list[tuple[str, str]]:
    """The agent's links as (label, url), web addresses only (they are user input)."""
    links = []
    for link in agent.links if isinstance(agent.links, list) else []:
        if isinstance(link, dict):
            url, label = str(link.get("url", "")), str(link.get("label") or link.get("url", ""))
        else:
            url = label = str(link)
        if url.startswith(("https://", "http://")):
            links.append((label, url))
    return links


def agent_detail_view(request: HttpRequest, name: str) -> HttpResponse:
    # A system agent (the judges' canaries) has no public page.
    agent = get_object_or_404(Agent.objects.public().select_related("team"), name=name)
    summaries = agent_stage_summaries(agent=agent)
    submitted_stages = set(agent.submissions.values_list("stage", flat=True).distinct())
    charts = []
    for summary in summaries:
        if summary.row is None:
            continue
        scores = summary.row["scores"]
        items = [
            (d["label"], "", scores[d["key"]], summary.row["overall_ci"] if i == 0 else None)
            for i, d in enumerate(summary.dimensions)
            if d["key"] in scores
        ]
        charts.append((summary.label, interval_chart(items, line=ACCEPTANCE_LINE)))
    return render(
        request,
        "leaderboard/agent_detail.html",
        {
            "agent": agent,
            "links": _agent_links(agent),
            "summaries": summaries,
            "submitted_stages": submitted_stages,
            "stage_results": agent_task_results(
                agent=agent, hidden=unseen_submission_ids(user=request.user)
            ),
            "charts": charts,
            "acceptance_line": ACCEPTANCE_LINE,
        },
    )


def task_results_view(request: HttpRequest, slug: str) -> HttpResponse:
    task = get_object_or_404(Task, slug=slug)
    return render(
        request,
        "leaderboard/task_results.html",
        {
            "task": task,
            "stage_results": task_results(
                task=task, hidden=unseen_submission_ids(user=request.user)
            ),
        },
    )


def _submission_page_url(submission: Submission) -> str | None:
    # The submission's own page belongs to the benchmark app; link to it when it exists.
    try:
        return reverse("submissions:submission-detail", args=[submission.pk])
    except NoReverseMatch:
        return None


def submission_scores_view(request: HttpRequest, pk: int) -> HttpResponse:
    submission = get_object_or_404(
        submissions_visible_to(
            user=request.user, submissions=Submission.objects.select_related("agent", "task")
        ),
        pk=pk,
    )
    judgments = list(submission_judgments(submission=submission))
    conditions = []
    labels = dict(JudgingCondition.choices)
    for condition in JudgingCondition.values:
        in_condition = [j for j in judgments if j.condition == condition]
        if not in_condition:
            continue
        means = stage_scores(submission_ids=[submission.pk], condition=condition).get(
            submission.pk, {}
        )
        dimensions = sorted(
            {s.dimension for j in in_condition for s in j.scores.all()},
            key=lambda k: (k != "Overall", k),
        )
        conditions.append(
            {
                "condition": condition,
                "label": labels[condition],
                "dimensions": dimensions,
                "judgments": [
                    (j, [{s.dimension: s for s in j.scores.all()}.get(k) for k in dimensions])
                    for j in in_condition
                ],
                "means": [means.get(k) for k in dimensions],
            }
        )
    return render(
        request,
        "leaderboard/submission_scores.html",
        {
            "submission": submission,
            "conditions": conditions,
            "submission_page_url": _submission_page_url(submission),
        },
    )


_TYPE_COLOURS = {
    "faked_experimental_results": "#a33b29",
    "hallucinated_methodology": "#c7822b",
    "nonexistent_citations": "#2952a3",
    "mathematical_errors": "#6b4fa3",
}


def _fabrication_chart(report: FabricationReport) -> ShareChart | None:
    """Types by agent: the judges under the rule, and the experts where they checked."""
    names = dict(HallucinationType.choices)
    groups = []
    for row in report.rows:
        if row.source not in (SOURCE_JUDGES, SOURCE_HUMAN):
            continue
        if not any(share.n for share in row.by_type.values()):
            continue
        who = "judges" if row.source == SOURCE_JUDGES else "experts"
        groups.append(
            (
                f"{row.display_name} ({who})",
                [
                    (kind, names[kind], row.by_type[kind].rate, row.by_type[kind].ci)
                    for kind in report.types
                ],
            )
        )
    return share_chart(groups) if groups else None


def fabrication_view(request: HttpRequest) -> HttpResponse:
    """`/fabrication/?stage=...&rule=...&judge=...`: the page of `GET /api/fabrication/`."""
    status = 200
    error = ""
    try:
        query = fabrication_query_parse(request.GET)
        report: FabricationReport | None = fabrication_report(query)
    except ValidationFailed as exc:
        query, report, error, status = FabricationQuery(), None, str(exc), 400
    hidden = unseen_submission_ids(user=request.user)
    if report is not None and hidden:
        # A reviewer with papers still to review blind sees no judge's findings on them.
        for row in report.rows:
            row.flagged_tasks = [t for t in row.flagged_tasks if t.submission_id not in hidden]
    names = dict(HallucinationType.choices)
    context = {
        "query": query,
        "report": report,
        "error": error,
        "stage_tabs": [
            (s, Stage(s).label, f"?stage={s}&rule={query.rule}") for s in FABRICATION_STAGES
        ],
        "rules": RULES,
        "type_names": [(kind, names[kind]) for kind in (report.types if report else ())],
        "chart": _fabrication_chart(report) if report else None,
        "colours": _TYPE_COLOURS,
        # Only the comparisons with papers in them: an all-empty table says nothing.
        "detection_human": [
            d for d in report.detection if d.reference == SOURCE_HUMAN and d.agreement.n
        ]
        if report
        else [],
        "detection_reproduction": [
            d for d in report.detection if d.reference == SOURCE_REPRODUCTION and d.agreement.n
        ]
        if report
        else [],
        "type_labels": {**names, "any": "any type"},
        "provenance": {
            "rows": provenance_by_agent(stage=query.stage),
            "rule": PROVENANCE_RULE,
            "experts": [
                score
                for score in provenance_detection(stages=(query.stage,))
                if score.reference == "experts" and score.agreement.n
            ],
        }
        if report
        else None,
    }
    return render(request, "leaderboard/fabrication.html", context, status=status)


def agents_compare_view(request: HttpRequest) -> HttpResponse:
    """Two agents side by side; the form picks them from the stage's board."""
    form = AgentCompareForm(request.GET)
    comparison = None
    status = 200
    query = LeaderboardQuery()
    # The board's "Compare two agents" link names the stage, not the agents yet:
    # the form to pick them, not an error.
    picking = not (request.GET.get("a") or request.GET.get("b"))
    if picking:
        form = AgentCompareForm(initial=request.GET.dict())
        stage = request.GET.get("stage")
        if stage in dict(STAGE_CHOICES):
            query = LeaderboardQuery(stage=stage)
    elif form.is_valid():
        query = form.leaderboard_query()
        try:
            comparison = agents_compare(
                query=query, a=form.cleaned_data["a"], b=form.cleaned_data["b"]
            )
        except UnknownAgent as exc:
            form_add_errors(form, exc)
            status = 400
    elif request.GET:
        status = 400
    agents = [row["agent"] for row in leaderboard_payload(query)["rows"]]
    return render(
        request,
        "leaderboard/compare.html",
        {
            "form": form,
            "query": query,
            "agents": agents,
            "comparison": comparison,
            "stage_label": dict(Stage.choices)[query.stage],
            "leaderboard_url": reverse("leaderboard:leaderboard")
            + "?"
            + canonical_params(query).urlencode(),
        },
        status=status,
    )


JUDGE_COLUMNS = (
    ("name", "Judge", False),
    ("mean_abs_diff", "Mean |judge − expert|", True),
    ("spearman_rho", "Spearman rho", True),
    ("krippendorff_alpha", "Krippendorff alpha", True),
    ("mann_whitney_p", "Mann-Whitney p (Holm)", True),
    ("mean_score", "Mean score", True),
    ("spread", "Spread (SD)", True),
    ("self_preference", "Self-preference", True),
    ("length_bias", "Length bias (rho)", True),
    ("cost_per_judgment", "Cost / judgment", True),
    ("median_latency_seconds", "Median latency (s)", True),
    ("failure_rate", "Failure rate", True),
    ("cost_per_hallucination_review", "Cost / hallucination review", True),
    ("fabrication_recall", "Fabrication recall", True),
    ("fabrication_precision", "Fabrication precision", True),
)


def judges_view(request: HttpRequest) -> HttpResponse:
    """The judges' leaderboard, from the API's answer (one definition)."""
    stage = request.GET.get("stage") or Stage.END2END
    sort = request.GET.get("sort") or ""
    status, board = 200, None
    errors: list[ErrorItem] = []
    try:
        board = judge_board_payload(stage=stage, sort=sort)
    except ApplicationError as exc:
        status, errors = exc.status_code, list(exc.items)
    shown_stage = stage if stage in dict(Stage.choices) else str(Stage.END2END)
    params = QueryDict(mutable=True)
    params["stage"] = shown_stage
    columns = [
        {**_column(key, label, params, sort, ascending_first=key == "name"), "numeric": numeric}
        for key, label, numeric in JUDGE_COLUMNS
    ]
    overall_key = board["overall_key"] if board else ""
    rows = [
        (row, next((a for a in row["agreement"] if a["dimension"] == overall_key), None))
        for row in (board["rows"] if board else [])
    ]
    return render(
        request,
        "leaderboard/judges.html",
        {
            "board": board,
            "rows": rows,
            "columns": columns,
            "errors": errors,
            "stage": shown_stage,
            "stage_label": dict(Stage.choices)[shown_stage],
            "stage_tabs": [(v, label, f"?stage={v}") for v, label in STAGE_CHOICES],
            "json_url": reverse("api:judges-leaderboard") + "?" + params.urlencode(),
            "canary_types": HallucinationType.choices,
            "has_canaries": any(row.get("canaries") for row, _overall in rows),
            "stale": served_stale(),
        },
        status=status,
    )


def releases_view(request: HttpRequest) -> HttpResponse:
    return render(request, "leaderboard/releases.html", {"releases": releases_list()})


def release_detail_view(request: HttpRequest, name: str) -> HttpResponse:
    try:
        release = release_get(name=name)
    except UnknownRelease as exc:
        raise Http404(str(exc)) from exc
    data = release_data(release)
    labels = dict(Stage.choices)
    boards = [
        (labels.get(stage, stage), answer)
        for stage, answer in data["leaderboards"].items()
        if answer.get("rows")
    ]
    url = request.build_absolute_uri(reverse("leaderboard:release-detail", args=[name]))
    others = [r.name for r in releases_list() if r.name != name]
    return render(
        request,
        "leaderboard/release_detail.html",
        {
            "release": release,
            "data": data,
            "boards": boards,
            "bibtex": release_bibtex(release, url=url),
            "others": others,
        },
    )


def releases_diff_view(request: HttpRequest, a: str, b: str) -> HttpResponse:
    try:
        diff = releases_diff(a=a, b=b)
    except UnknownRelease as exc:
        raise Http404(str(exc)) from exc
    return render(
        request,
        "leaderboard/release_diff.html",
        {"diff": diff, "stage_labels": dict(Stage.choices)},
    )
