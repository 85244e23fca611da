"""Reads of the benchmark catalogue that pages and the API share."""

from dataclasses import dataclass

from django.db.models import Count, QuerySet

from .models import Conference, Task, TaskKind, Topic


def task_list() -> QuerySet[Task]:
    return Task.objects.all()


@dataclass(frozen=True)
class CatalogueCounts:
    """The open-ended (MLR-Bench) tasks by year, conference and topic, which add
    up to `tasks`; the objective tasks, which have no topic, counted apart."""

    tasks: int
    by_year: list[tuple[int, int]]
    by_conference: list[tuple[str, int]]
    by_topic: list[tuple[str, int]]
    objective_tasks: int = 0


def catalogue_counts() -> CatalogueCounts:
    open_ended = Task.objects.filter(kind=TaskKind.OPEN_ENDED)
    by_year = dict(open_ended.values_list("year").annotate(n=Count("id")).order_by())
    by_conference = dict(open_ended.values_list("conference").annotate(n=Count("id")).order_by())
    by_topic = dict(open_ended.values_list("topic").annotate(n=Count("id")).order_by())
    return CatalogueCounts(
        objective_tasks=Task.objects.filter(kind=TaskKind.OBJECTIVE).count(),
        tasks=sum(by_year.values()),
        by_year=sorted(by_year.items()),
        by_conference=[(label, by_conference.get(value, 0)) for value, label in Conference.choices],
        by_topic=[
            (label, by_topic[value]) for value, label in Topic.choices if by_topic.get(value)
        ],
    )
