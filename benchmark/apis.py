from rest_framework import viewsets

from .filters import TaskFilter
from .selectors import task_list
from .serializers import TaskListSerializer, TaskSerializer


class TaskViewSet(viewsets.ReadOnlyModelViewSet):
    """The task catalogue. Filter with `conference`, `year`, `topic`, `kind`, `search`."""

    lookup_field = "slug"
    filterset_class = TaskFilter

    def get_queryset(self):
        queryset = task_list()
        if self.action == "list":
            queryset = queryset.defer("description")
        return queryset

    def get_serializer_class(self):
        return TaskListSerializer if self.action == "list" else TaskSerializer
