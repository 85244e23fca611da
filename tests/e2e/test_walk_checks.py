# The page under test is HTML, a line per element.
# ruff: noqa: E501
"""The page walk's keyboard and screen-reader checks (tests/e2e/accessibility.py)
catch what they look for: a chart with no text alternative, a form control the
Tab key skips or reaches out of order, a focus nobody can see."""

import pytest

from tests.e2e.accessibility import CHART_PROBLEMS, forms_keyboard_problems

pytestmark = pytest.mark.browser

PAGE = """<!doctype html><html lang="en"><head><title>checks</title>
<style>.no-ring:focus { outline: none; }</style></head><body><main>
<svg class="chart" data-testid="bare" width="200" height="100"><rect width="10" height="10"/></svg>
<svg class="chart" role="img" aria-label="Scores per agent" width="200" height="100"><rect width="10" height="10"/></svg>
<figure><svg width="200" height="100"><rect width="10" height="10"/></svg><figcaption>Cost against score</figcaption></figure>
<svg aria-hidden="true" width="16" height="16"><rect width="10" height="10"/></svg>
<form id="in-order"><label>A <input name="a"></label>
  <label><input type="radio" name="r" value="1"> one</label><label><input type="radio" name="r" value="2"> two</label>
  <button>Go</button></form>
<form id="skipped"><label>B <input name="b"></label><label>C <input name="c" tabindex="-1"></label><button>Go</button></form>
<form id="reordered"><label>D <input name="d" tabindex="2"></label><label>E <input name="e" tabindex="1"></label></form>
<form id="dated"><label>Due <input type="datetime-local" name="due"></label><button>Set</button></form>
<form id="unseen"><label>F <input name="f" class="no-ring"></label></form>
</main></body></html>"""


def test_the_walks_checks_catch_charts_without_text_and_forms_the_keyboard_cannot_use(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_content(PAGE)

    assert page.evaluate(CHART_PROBLEMS) == ["a chart without a text alternative: bare"]

    problems = forms_keyboard_problems(page, set())
    assert not any(p.startswith(("in-order", "dated")) for p in problems), problems
    assert any(p.startswith("skipped: Tab reaches") for p in problems), problems
    assert any(p.startswith("reordered: Tab reaches") for p in problems), problems
    assert any(p.startswith("unseen: no visible focus") for p in problems), problems
    context.close()
