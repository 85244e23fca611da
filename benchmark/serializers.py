from rest_framework import serializers

from .models import Task


class TaskListSerializer(serializers.HyperlinkedModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:task-detail", lookup_field="slug")
    page_url = serializers.CharField(source="get_absolute_url", read_only=True)

    class Meta:
        model = Task
        fields = ["url", "page_url", "slug", "title", "conference", "year", "topic", "kind"]


class TaskSerializer(TaskListSerializer):
    class Meta(TaskListSerializer.Meta):
        fields = [*TaskListSerializer.Meta.fields, "description", "created_at", "updated_at"]
