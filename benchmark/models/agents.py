from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.urls import reverse


class Team(models.Model):
    """A group of users that owns agents; conflicts of interest in review are per team."""

    name = models.CharField(max_length=120, unique=True)
    slug = models.SlugField(max_length=120, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="teams", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ModelFamily(models.TextChoices):
    """Who made the model; a judge of the agent's own family may be left out."""

    ANTHROPIC = "anthropic", "Anthropic"
    OPENAI = "openai", "OpenAI"
    GOOGLE = "google", "Google"
    DEEPSEEK = "deepseek", "DeepSeek"
    QWEN = "qwen", "Qwen (Alibaba)"
    MISTRAL = "mistral", "Mistral"
    META = "meta", "Meta"
    OTHER = "other", "Other"


AGENT_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,99}$"


class AgentQuerySet(models.QuerySet["Agent"]):
    def public(self) -> "AgentQuerySet":
        """Without the site's own system agents (the owner of planted-fabrication
        canaries): they are no one's entry and appear on no public page."""
        return self.filter(is_system=False)


class Agent(models.Model):
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="agents")
    # Published agents are named after their models (`o4-mini-2025-04-16`,
    # `gemini-2.5-pro-preview`), so a name may hold dots as well as a slug's characters.
    name = models.CharField(
        max_length=100,
        unique=True,
        validators=[
            RegexValidator(AGENT_NAME_PATTERN, "Lower-case letters, digits, '.', '_' and '-'.")
        ],
        help_text="Unique name, e.g. `claude` or `o4-mini-2025-04-16`.",
    )
    display_name = models.CharField(max_length=200)
    base_model = models.CharField(max_length=200, blank=True)
    coding_agent = models.CharField(max_length=200, blank=True)
    scaffold = models.CharField(max_length=200, blank=True, help_text="e.g. MLR-Agent")
    model_family = models.CharField(
        max_length=32, choices=ModelFamily.choices, default=ModelFamily.OTHER
    )
    description = models.TextField(blank=True)
    links = models.JSONField(default=list, blank=True)
    # The site's own agent (e.g. the owner of the judges' canaries): staff-only,
    # never on a leaderboard, an export, a release or a public list.
    is_system = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AgentQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(model_family__in=ModelFamily.values), name="agent_model_family_valid"
            ),
            models.CheckConstraint(
                condition=Q(name__regex=AGENT_NAME_PATTERN), name="agent_name_format"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("submissions:agent-detail", kwargs={"name": self.name})
