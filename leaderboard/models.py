from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

release_name_validator = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
    "Letters, digits, dots, dashes and underscores, starting with a letter or digit.",
)


class Release(models.Model):
    """A frozen, citable leaderboard: the canonical JSON of every stage's board
    and the data it rests on, its SHA-256, and the export zip built from it.
    Written once; only a withdrawal (with a reason) may be added later."""

    name = models.CharField(max_length=64, unique=True, validators=[release_name_validator])
    notes = models.TextField(blank=True)
    created_at = models.DateTimeField()
    # The canonical JSON (UTF-8), exactly the bytes the API serves.
    content = models.BinaryField()
    content_sha256 = models.CharField(max_length=64)
    export_zip = models.BinaryField()
    site_version = models.CharField(max_length=64)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    withdrawn_reason = models.TextField(blank=True)

    FROZEN_FIELDS = (
        "name",
        "notes",
        "created_at",
        "content",
        "content_sha256",
        "export_zip",
        "site_version",
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(withdrawn_at__isnull=True, withdrawn_reason="")
                | models.Q(withdrawn_at__isnull=False) & ~models.Q(withdrawn_reason=""),
                name="release_withdrawn_with_reason",
            )
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:
        # Frozen: once written, only the withdrawal may change.
        if self.pk is not None:
            stored = Release.objects.filter(pk=self.pk).values(*self.FROZEN_FIELDS).first()
            if stored is not None:
                for name in self.FROZEN_FIELDS:
                    current = getattr(self, name)
                    before = stored[name]
                    if isinstance(before, memoryview):
                        before = bytes(before)
                    if isinstance(current, memoryview):
                        current = bytes(current)
                    if before != current:
                        raise ValidationError(f"a release never changes ({name})")
        super().save(*args, **kwargs)


class ReleaseFile(models.Model):
    """One file of a release beside its JSON (a table as Parquet, the dataset card,
    the Croissant metadata): written with the release, never changed; the
    release's JSON lists each one with its SHA-256."""

    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="files")
    name = models.CharField(max_length=100)
    media_type = models.CharField(max_length=100)
    content = models.BinaryField()
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()

    class Meta:
        ordering = ["release", "name"]
        constraints = [
            models.UniqueConstraint(fields=["release", "name"], name="release_file_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.release.name}/{self.name}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            raise ValidationError("a release's file never changes")
        super().save(*args, **kwargs)
