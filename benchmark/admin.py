from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User

from common.results_admin import ResultsAdminMixin

from .models import Agent, ApiToken, Task, Team


@admin.register(Task)
class TaskAdmin(ResultsAdminMixin, admin.ModelAdmin):
    list_display = ["slug", "title", "conference", "year", "topic", "kind", "updated_at"]
    list_filter = ["conference", "year", "topic", "kind"]
    search_fields = ["slug", "title", "description"]
    readonly_fields = ["created_at", "updated_at"]
    list_editable = ["topic"]
    list_per_page = 50


# Teams, agents and tokens: organisers add members to teams here.
@admin.register(Team)
class TeamAdmin(ResultsAdminMixin, admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug", "members__username"]
    prepopulated_fields = {"slug": ["name"]}
    filter_horizontal = ["members"]


@admin.register(Agent)
class AgentAdmin(ResultsAdminMixin, admin.ModelAdmin):
    list_display = ["name", "display_name", "team", "base_model", "model_family", "created_at"]
    list_filter = ["model_family", "team"]
    search_fields = ["name", "display_name", "base_model"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "revoked_at"]
    search_fields = ["name", "user__username", "prefix"]
    readonly_fields = ["prefix", "key_sha256", "created_at", "last_used_at"]


class SiteUserAdmin(UserAdmin):
    """Organisers make accounts here (docs/submissions.md), but they cannot make
    anyone, themselves included, a superuser or give permissions one by one:
    only a superuser changes those (`accounts role-add` from the shell). Nor do they
    see superusers' accounts: changing one's password would make them one."""

    _SUPERUSER_ONLY = ("is_superuser", "user_permissions")

    def get_queryset(self, request):
        users = super().get_queryset(request)
        return users if request.user.is_superuser else users.filter(is_superuser=False)

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if not request.user.is_superuser:
            fields += self._SUPERUSER_ONLY
        return fields


admin.site.unregister(User)
admin.site.register(User, SiteUserAdmin)
