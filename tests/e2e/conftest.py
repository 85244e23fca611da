"""Browser tests: a real headless Chromium (the system package, never a
downloaded one) driven by playwright against pytest-django's live server."""

import os
import shutil

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import expect, sync_playwright

    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium is not installed at {CHROMIUM} (apt-get install -y chromium)")
    # playwright's sync API runs an event loop; Django must allow ORM calls in tests.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    # expect() waits on its own 5 s default, not the page's: on a loaded CI
    # machine (parallel workers) a page that renders in 6 s is no failure.
    expect.set_options(timeout=15_000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    # Static files: scripts/test.sh sets STATIC_MANIFEST=0, since the live
    # server serves plain names from the finders, not the manifest's hashed ones.
    context = browser.new_context(base_url=live_server.url, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()
