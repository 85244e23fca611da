"""Reads of the benchmark catalogue that pages and the API share."""

from dataclasses import dataclass

from django.db.models import Count, QuerySet

from .models import Conference, Task, Topic


def task_list() -> QuerySet[Task]:
    return Task.objects.all()


@dataclass(frozen=True)
class CatalogueCounts:
    tasks: int
    by_year: list[tuple[int, int]]
    by_conference: list[tuple[str, int]]
    by_topic: list[tuple[str, int]]


def catalogue_counts() -> CatalogueCounts:
    by_year = dict(Task.objects.values_list("year").annotate(n=Count("id")).order_by())
    by_conference = dict(Task.objects.values_list("conference").annotate(n=Count("id")).order_by())
    by_topic = dict(Task.objects.values_list("topic").annotate(n=Count("id")).order_by())
    return CatalogueCounts(
        tasks=sum(by_year.values()),
        by_year=sorted(by_year.items()),
        by_conference=[(label, by_conference.get(value, 0)) for value, label in Conference.choices],
        by_topic=[
            (label, by_topic[value]) for value, label in Topic.choices if by_topic.get(value)
        ],
    )
