"""Releases in the admin: an organiser makes one here as `release create` does
(the service freezes the boards in one snapshot) and reads it back; a release
never changes, and a withdrawal (with its reason) stays `release withdraw`'s."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from .models import Release
from .releases import release_create


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at", "content_sha256", "withdrawn_at")
    search_fields = ("name",)
    # What the add form asks; a made release shows its record, read-only.
    add_fields = ("name", "notes")
    shown = (
        "name",
        "notes",
        "created_at",
        "content_sha256",
        "site_version",
        "withdrawn_at",
        "withdrawn_reason",
        "public_page",
    )

    def get_fields(self, request, obj=None):
        return self.add_fields if obj is None else self.shown

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else self.shown

    def has_change_permission(self, request, obj=None):
        # Opened, a release is shown (the admin's view page), never edited.
        return obj is None and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="public page")
    def public_page(self, release: Release) -> str:
        url = reverse("leaderboard:release-detail", args=[release.name])
        return format_html('<a href="{}">{}</a>', url, url)

    def save_model(self, request, obj, form, change):
        release = release_create(name=obj.name, notes=obj.notes)
        for field in Release._meta.concrete_fields:
            setattr(obj, field.attname, getattr(release, field.attname))
        obj._state.adding = False
