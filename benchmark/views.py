"""Pages of the catalogue (tasks) and of a user's account: teams, agents and API
tokens. Thin: forms, then services or selectors."""

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render, resolve_url
from django.urls import reverse
from django.views.decorators.http import require_POST

from common.errors import ApplicationError, NotFound, form_add_errors
from common.http import AuthenticatedHttpRequest

from .accounts import (
    agent_register,
    agents_of,
    api_token_create,
    api_token_revoke,
    team_create,
    teams_of,
)
from .descriptions import task_description_html
from .filters import TaskFilter
from .forms import AgentForm, ApiTokenForm, TeamForm
from .models import Task
from .page_panels import task_page_panels
from .roles import is_reviewer_only
from .selectors import task_list

TASKS_PER_PAGE = 25


def task_list_view(request: HttpRequest) -> HttpResponse:
    task_filter = TaskFilter(
        request.GET, queryset=task_list().defer("description", "description_html")
    )
    tasks = task_filter.qs if task_filter.is_valid() else Task.objects.none()
    page = Paginator(tasks, TASKS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "benchmark/task_list.html",
        {"filter": task_filter, "page": page, "query": query.urlencode()},
    )


def task_detail_view(request: HttpRequest, slug: str) -> HttpResponse:
    task = get_object_or_404(Task, slug=slug)
    return render(
        request,
        "benchmark/task_detail.html",
        {
            "task": task,
            "description_html": task_description_html(task),
            "panels": task_page_panels(request=request, task=task),
        },
    )


@login_required
def account_view(request: AuthenticatedHttpRequest) -> HttpResponse:
    return _account_render(request)


def _account_render(request, *, status=200, new_key=None, **forms) -> HttpResponse:
    user = request.user
    context = {
        "teams": teams_of(user).prefetch_related("members"),
        "agents": agents_of(user),
        "tokens": user.api_tokens.all(),
        "team_form": forms.get("team_form") or TeamForm(),
        "agent_form": forms.get("agent_form") or AgentForm(user=user),
        "token_form": forms.get("token_form") or ApiTokenForm(),
        "new_key": new_key,
    }
    return render(request, "benchmark/account.html", context, status=status)


@login_required
@require_POST
def team_create_view(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = TeamForm(request.POST)
    if form.is_valid():
        try:
            team = team_create(name=form.cleaned_data["name"], creator=request.user)
        except ApplicationError as exc:
            form_add_errors(form, exc)
        else:
            messages.success(request, f"Team {team.name} created.")
            return redirect("benchmark:account")
    return _account_render(request, status=400, team_form=form)


@login_required
@require_POST
def agent_register_view(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = AgentForm(request.POST, user=request.user)
    if form.is_valid():
        data = form.cleaned_data
        try:
            agent = agent_register(user=request.user, **data)
        except ApplicationError as exc:
            form_add_errors(form, exc)
        else:
            messages.success(request, f"Agent {agent.name} registered.")
            return redirect("benchmark:account")
    return _account_render(request, status=400, agent_form=form)


@login_required
@require_POST
def token_create_view(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = ApiTokenForm(request.POST)
    if form.is_valid():
        try:
            created = api_token_create(user=request.user, name=form.cleaned_data["name"])
        except ApplicationError as exc:
            form_add_errors(form, exc)
        else:
            # Shown in this response only; never stored, never shown again.
            response = _account_render(request, new_key=created.key)
            response["Cache-Control"] = "no-store"
            return response
    return _account_render(request, status=400, token_form=form)


@login_required
@require_POST
def token_revoke_view(request: AuthenticatedHttpRequest, token_id: int) -> HttpResponse:
    try:
        token = api_token_revoke(user=request.user, token_id=token_id)
    except NotFound as exc:
        raise Http404(exc.message) from None
    messages.success(request, f"Token {token.name} revoked.")
    return redirect("benchmark:account")


# ------------------------------------------------------------------ signing in


class SignInView(LoginView):
    """The site's one sign-in page (`/accounts/login/`): a reviewer lands on
    their queue (or the review page they were sent from), everyone else where
    they were going."""

    template_name = "registration/login.html"

    def get_success_url(self) -> str:
        wanted = self.get_redirect_url()
        if is_reviewer_only(self.request.user):
            queue = reverse("reviews:queue")
            return wanted if wanted.startswith(queue) else queue
        return wanted or resolve_url(settings.LOGIN_REDIRECT_URL)


def sign_in_elsewhere_view(request: HttpRequest, *, default_next: str) -> HttpResponse:
    """The old sign-in addresses (`/reviews/login/`, the admin's) lead to the
    one sign-in page, keeping where the visitor was going."""
    wanted = request.GET.get("next") or resolve_url(default_next)
    return redirect(f"{reverse('login')}?{urlencode({'next': wanted})}")
