from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from .derived import task_description_html
from .filters import TaskFilter
from .models import Task
from .page_panels import task_page_panels
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
