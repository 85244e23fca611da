from django.contrib import admin

from .models import Task


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["slug", "title", "conference", "year", "topic", "kind", "updated_at"]
    list_filter = ["conference", "year", "topic", "kind"]
    search_fields = ["slug", "title", "description"]
    readonly_fields = ["created_at", "updated_at"]
    list_editable = ["topic"]
    list_per_page = 50


# Experiment runs, objective tasks and results register their own admins.
from .experiments import admin as experiments_admin  # noqa: E402, F401
