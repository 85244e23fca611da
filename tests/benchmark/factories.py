import factory

from benchmark.models import Conference, Task, TaskKind


class TaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Task
        django_get_or_create = ("slug",)

    conference = Conference.ICLR
    year = 2025
    slug = factory.Sequence(lambda n: f"iclr2025_generated{n}")
    title = factory.Sequence(lambda n: f"Generated workshop {n}")
    description = factory.LazyAttribute(lambda task: f"# {task.title}\n\nA generated task.")
    kind = TaskKind.OPEN_ENDED
