"""Public pages: the leaderboard, an agent, a task's results, a submission's judgments."""

from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import NoReverseMatch, reverse
from django.utils.safestring import SafeString

from benchmark.models import Agent, Task
from common.cache_generation import served_stale
from common.charts import ShareChart, interval_chart, share_chart
from common.errors import ApplicationError, ErrorItem, ValidationFailed, form_add_errors
from judging.models import HallucinationType, JudgingCondition
from judging.selectors import stage_scores
from submissions.models import Stage, Submission
from submissions.visibility import submissions_visible_to, task_hidden_from, unseen_submission_ids

from .boards import (
    board_page_html,
    canonical_params,
    objective_board_html,
    query_string,
    sort_heading,
)
from .forms import (
    BOARD_CHOICES,
    STAGE_CHOICES,
    AgentCompareForm,
    LeaderboardQueryForm,
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
    LeaderboardQuery,
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
from .selectors.objective import OBJECTIVE_STAGE
from .selectors.results import agent_task_results, submission_judgments, task_results


def leaderboard_view(request: HttpRequest) -> HttpResponse:
    form = LeaderboardQueryForm(request.GET)
    status = 200
    sort = ""
    board_html = SafeString("")
    if form.is_valid():
        query = form.leaderboard_query()
        if query.task and task_hidden_from(user=request.user, slug=query.task):
            raise Http404("No such task.")
        sort = form.cleaned_data.get("sort") or ""
        try:
            if query.stage == OBJECTIVE_STAGE:
                board_html = objective_board_html(form.cleaned_data["idea_source"])
            else:
                board_html = board_page_html(query, sort)
        except ValueError as exc:
            form.add_error(None, str(exc))
            status = 400
    else:
        # The tab asked for, when it is the objective one (a bad configuration filter).
        objective = form.cleaned_data.get("stage") == OBJECTIVE_STAGE
        query = LeaderboardQuery(stage=OBJECTIVE_STAGE) if objective else LeaderboardQuery()
        status = 400
    params = canonical_params(query)
    context = {
        "form": form,
        "query": query,
        "board_html": board_html,
        "stale": served_stale(),
        "stage_label": dict(BOARD_CHOICES)[query.stage],
        "is_objective": query.stage == OBJECTIVE_STAGE,
        "stage_tabs": [
            (value, label, "?" + query_string(params, stage=value))
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
        {
            **sort_heading(key, label, params, sort, ascending_first=key == "name"),
            "numeric": numeric,
        }
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
