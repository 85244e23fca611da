"""One filter set for the task catalogue, shared by the pages and the API, so
that `?conference=iclr&year=2025&topic=ml_theory&search=...` means the same
thing everywhere."""

import django_filters
from django.db.models import Q, QuerySet

from common.filters import WholeNumberFilter

from .models import Conference, Task, TaskKind, Topic


class TaskFilter(django_filters.FilterSet):
    conference = django_filters.ChoiceFilter(choices=Conference.choices)
    year = WholeNumberFilter()
    topic = django_filters.ChoiceFilter(choices=Topic.choices)
    kind = django_filters.ChoiceFilter(choices=TaskKind.choices)
    search = django_filters.CharFilter(method="filter_search", label="Search")

    class Meta:
        model = Task
        fields = ["conference", "year", "topic", "kind", "search"]

    def filter_search(self, queryset: QuerySet[Task], name: str, value: str) -> QuerySet[Task]:
        for word in value.split()[:10]:
            queryset = queryset.filter(
                Q(slug__icontains=word) | Q(title__icontains=word) | Q(description__icontains=word)
            )
        return queryset
