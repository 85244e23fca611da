from django.apps import AppConfig


class AgentRunsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "agent_runs"
    verbose_name = "Agent runs (MLR-Agent)"
