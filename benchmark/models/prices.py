from django.db import models
from django.db.models import Q


class ModelPrice(models.Model):
    """A model's price that organisers add (a model litellm's table does not
    list, or a rate of their own); it wins over the price table shipped with
    the site (`submissions.prices`) and litellm's (the order: `common.prices`).
    USD per million tokens."""

    model = models.CharField(
        max_length=200,
        unique=True,
        help_text="The model name as usage files and agents spell it (no provider prefix).",
    )
    match_dated = models.BooleanField(
        default=False, help_text="Also price the model's dated names (`<model>-MM-DD`)."
    )
    input_usd_per_mtok = models.DecimalField("input", max_digits=12, decimal_places=6)
    output_usd_per_mtok = models.DecimalField("output", max_digits=12, decimal_places=6)
    cache_write_usd_per_mtok = models.DecimalField(
        "cache write", max_digits=12, decimal_places=6, null=True, blank=True
    )
    cache_read_usd_per_mtok = models.DecimalField(
        "cache read", max_digits=12, decimal_places=6, null=True, blank=True
    )
    source = models.CharField(max_length=500, help_text="Where the price was read.")
    as_of = models.DateField(help_text="When the price was read there.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["model"]
        constraints = [
            models.CheckConstraint(
                condition=Q(input_usd_per_mtok__gte=0, output_usd_per_mtok__gte=0),
                name="model_price_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return self.model
