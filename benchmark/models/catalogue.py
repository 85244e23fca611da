from django.db import models
from django.db.models import Q
from django.urls import reverse


class Conference(models.TextChoices):
    ICLR = "iclr", "ICLR"
    ICML = "icml", "ICML"
    NEURIPS = "neurips", "NeurIPS"


class Topic(models.TextChoices):
    """The nine topics of the MLR-Bench paper."""

    LLM_VLM = "llm_vlm", "LLMs and VLMs"
    AI_FOR_SCIENCE = "ai_for_science", "AI for Science"
    ML_THEORY = "ml_theory", "ML Theory"
    TRUSTWORTHY_AI = "trustworthy_ai", "Trustworthy AI"
    COMPUTER_VISION = "computer_vision", "Computer Vision"
    ML_SYSTEMS = "ml_systems", "ML Systems"
    MULTIMODALITY = "multimodality", "Multimodality"
    REINFORCEMENT_LEARNING = "reinforcement_learning", "Reinforcement Learning"
    OTHER = "other", "Other"


class TaskKind(models.TextChoices):
    OPEN_ENDED = "open_ended", "Open-ended"
    OBJECTIVE = "objective", "Objective"


# Slugs are `<conference><year>_<workshop>`; the workshop part keeps the
# repository's own case (e.g. `icml2024_FoRLaC`).
TASK_SLUG_PATTERN = r"^(iclr|icml|neurips)(20[0-9]{2})_([A-Za-z0-9][A-Za-z0-9_-]*)$"
# Objective tasks (MLRC-Bench's competitions) come from any venue: KDD Cup,
# CVPR, ... `<venue><year>_<name>` with a lowercase venue.
OBJECTIVE_SLUG_PATTERN = r"^([a-z]{2,16})(20[0-9]{2})_([A-Za-z0-9][A-Za-z0-9_-]*)$"
VENUE_PATTERN = r"^[a-z]{2,16}$"


class Task(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=300)
    conference = models.CharField(max_length=16, choices=Conference.choices)
    year = models.PositiveSmallIntegerField()
    topic = models.CharField(max_length=32, choices=Topic.choices, blank=True, default="")
    description = models.TextField(help_text="The task as markdown.")
    # The description rendered once to clean HTML, and the digest of the text
    # it was rendered from (submissions/derived.py); pages serve this.
    description_html = models.TextField(blank=True, default="", editable=False)
    description_html_sha256 = models.CharField(
        max_length=64, blank=True, default="", editable=False
    )
    kind = models.CharField(max_length=16, choices=TaskKind.choices, default=TaskKind.OPEN_ENDED)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-year", "conference", "slug"]
        constraints = [
            models.CheckConstraint(
                condition=Q(conference__in=Conference.values)
                | Q(kind=TaskKind.OBJECTIVE, conference__regex=VENUE_PATTERN),
                name="task_conference_valid",
            ),
            models.CheckConstraint(
                condition=Q(topic__in=[*Topic.values, ""]), name="task_topic_valid"
            ),
            models.CheckConstraint(condition=Q(kind__in=TaskKind.values), name="task_kind_valid"),
            models.CheckConstraint(
                condition=Q(year__gte=2000, year__lte=2100), name="task_year_plausible"
            ),
            models.CheckConstraint(
                condition=Q(slug__regex=TASK_SLUG_PATTERN)
                | Q(kind=TaskKind.OBJECTIVE, slug__regex=OBJECTIVE_SLUG_PATTERN),
                name="task_slug_format",
            ),
            models.CheckConstraint(condition=~Q(title=""), name="task_title_not_empty"),
        ]
        indexes = [models.Index(fields=["conference", "year"]), models.Index(fields=["topic"])]

    def __str__(self) -> str:
        return self.slug

    def get_absolute_url(self) -> str:
        return reverse("benchmark:task-detail", kwargs={"slug": self.slug})

    @property
    def venue(self) -> str:
        """The conference's name, or an objective task's venue as its slug has it (KDD)."""
        if self.conference in Conference.values:
            return Conference(self.conference).label
        return self.conference.upper()
