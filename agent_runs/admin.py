from django.contrib import admin

from .models import AgentRun, AgentRunStage


class AgentRunStageInline(admin.TabularInline):
    model = AgentRunStage
    extra = 0
    can_delete = False
    readonly_fields = [f.name for f in AgentRunStage._meta.fields]


@admin.register(AgentRun)
class AgentRunAdmin(admin.ModelAdmin):
    list_display = ["id", "agent", "task", "mode", "stage", "status", "tokens", "cost_usd"]
    list_filter = ["status", "mode"]
    readonly_fields = [f.name for f in AgentRun._meta.fields]
    inlines = [AgentRunStageInline]
