import pytest

from benchmark.services import tasks_import

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_visitor_filters_the_catalogue_and_opens_a_task(page, mlrbench_data):
    tasks_import(path=mlrbench_data)

    page.goto("/")
    assert page.get_by_test_id("task-count").inner_text() == "201"
    page.get_by_role("link", name="Browse the task catalogue").click()
    page.get_by_label("Year").fill("2025")
    page.get_by_label("Conference").select_option("iclr")
    page.get_by_role("button", name="Filter").click()
    assert page.get_by_test_id("result-count").inner_text() == "37 tasks"
    page.get_by_label("Search").fill("bidirectional")
    page.get_by_role("button", name="Filter").click()
    page.get_by_role("link", name="Workshop on Bidirectional Human-AI Alignment").click()
    assert page.locator("main > h1").inner_text() == "Workshop on Bidirectional Human-AI Alignment"
