from csp.decorators import csp_update
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.decorators.cache import never_cache
from django.views.defaults import page_not_found
from drf_spectacular.views import SpectacularSwaggerSplitView

from benchmark.selectors import catalogue_counts
from common.errors import NotFound
from common.http import json_error
from judging.selectors import active_judge_count

from .health import health_report

# Swagger UI (from the sidecar package, served by the site) draws its icons as
# data: SVGs in its stylesheet; the docs page allows those images and no more.
api_docs_view = csp_update({"img-src": ["data:"]})(
    SpectacularSwaggerSplitView.as_view(url_name="api:schema")
)


def home_view(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html", {"counts": catalogue_counts()})


@never_cache
def healthz_view(request: HttpRequest) -> JsonResponse:
    healthy, checks = health_report()
    body: dict[str, object] = {"status": "ok" if healthy else "unavailable", "checks": checks}
    if checks["database"]["ok"]:
        # Not a check (a site with no judge is up), but why uploads are never judged.
        body["active_judges"] = active_judge_count()
    return JsonResponse(
        body,
        status=200 if healthy else 503,
    )


def not_found_view(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A path no URL matches: the API's one error body under /api/, the site's page elsewhere."""
    if request.path.startswith("/api/"):
        return json_error(NotFound(f"no API endpoint at {request.path}"))
    return page_not_found(request, exception)


def favicon_view(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico whatever the page's <link> says. The static URL is
    looked up per request, not when the URLs are imported: with hashed static files
    that lookup needs the manifest, and a process without it (a worker, a script)
    must still be able to import the URLs."""
    return redirect(static("favicon.svg"), permanent=True)
