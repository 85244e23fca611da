# The page checks are JavaScript run in the browser.
# ruff: noqa: E501
"""What the page walk (test_pages_read_well.py) checks for a keyboard and a
screen reader on every page it visits: axe-core's findings, each chart's text
alternative, and each form's tab order and visible focus."""

from pathlib import Path

# axe-core from the npm registry (tests/e2e/axe/package.json, installed by .ci/run
# with `npm ci --prefix tests/e2e/axe`), run on every page the walk visits.
AXE = Path(__file__).resolve().parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
# The API docs page is Swagger UI's own widget (#swagger-ui): it nests its
# controls (a button inside the operation's summary) and colours its badges itself;
# the site checks the page around it (tests/site: the schema, not the widget, is ours).
AXE_VIOLATIONS = """async (nameRules) => {
  const context = document.querySelector('#swagger-ui') ? {exclude: [['#swagger-ui']]} : document;
  const result = await axe.run(context, {resultTypes: ['violations']});
  const ran = new Set();
  for (const kind of ['passes', 'violations', 'incomplete', 'inapplicable'])
    for (const rule of result[kind]) ran.add(rule.id);
  const problems = nameRules.filter(id => !ran.has(id)).map(id => 'axe did not run ' + id);
  return problems.concat(result.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical' || nameRules.includes(v.id))
    .map(v => 'axe ' + v.impact + ' ' + v.id + ': ' + v.help + ' (' + v.nodes.length + '): '
      + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')));
}"""


def axe_problems(page) -> list[str]:
    """Serious and critical accessibility violations on the page (WCAG A and AA,
    and axe's best practices), and any of the name rules'. Evaluated through the
    debugging protocol, not a script tag, so the site's nonce CSP is left as it is."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    return page.evaluate(AXE_VIOLATIONS, list(AXE_NAME_RULES))


# The rules by which axe checks that every form control and chart has a name a
# screen reader reads: each must have run on every page (a rule a page has
# nothing for counts as run: axe calls it inapplicable), and any finding of
# theirs fails the walk, whatever its impact.
AXE_NAME_RULES = (
    "label",
    "select-name",
    "button-name",
    "input-button-name",
    "aria-input-field-name",
    "svg-img-alt",
    "role-img-alt",
)

# A chart a screen reader can read: an <svg> or <canvas> that is role="img" (or a
# group, or a figure) with a name (aria-label, aria-labelledby or its own
# <title>), or a figure with a caption; decoration says aria-hidden="true".
CHART_PROBLEMS = """() => {
  const problems = [];
  const shown = el => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  const text = el => (el ? el.textContent : '').trim();
  const named = el => {
    if ((el.getAttribute('aria-label') || '').trim()) return true;
    const ids = (el.getAttribute('aria-labelledby') || '').split(/\\s+/).filter(Boolean);
    if (ids.some(id => text(document.getElementById(id)))) return true;
    return text(el.querySelector(':scope > title')) !== '';
  };
  for (const chart of document.querySelectorAll('svg, canvas')) {
    if (chart.closest('[aria-hidden="true"], #swagger-ui') || !shown(chart)) continue;
    // An svg inside a named svg (a chart's own parts) is read with it.
    if (chart.parentElement && chart.parentElement.closest('svg')) continue;
    // role="img" when the picture is all; a named group when its points are
    // links or carry their own titles (a screen reader reads them one by one).
    if (['img', 'group', 'figure'].includes(chart.getAttribute('role')) && named(chart)) continue;
    const figure = chart.closest('figure');
    if (figure && text(figure.querySelector('figcaption'))) continue;
    const name = chart.dataset.testid || chart.getAttribute('class') || chart.tagName.toLowerCase();
    problems.push('a chart without a text alternative: ' + name);
  }
  return [...new Set(problems)];
}"""

# Each shown form's tab stops in document order, marked data-walk-stop="FORM-I":
# one stop per radio group (Tab reaches its checked radio, or its first).
FORMS_MARK = """(seen) => {
  const shown = el => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  const stops = 'input:not([type=hidden]), select, textarea, button, a[href], summary, [tabindex]:not([tabindex="-1"]), [contenteditable=""], [contenteditable="true"]';
  const found = [];
  document.querySelectorAll('[data-walk-stop]').forEach(el => el.removeAttribute('data-walk-stop'));
  [...document.forms].forEach((form, f) => {
    if (!shown(form) || form.closest('#swagger-ui')) return;
    const controls = [...form.querySelectorAll(stops)].filter(
      el => shown(el) && !el.disabled && !el.closest('fieldset:disabled') && !el.closest('details:not([open]) > :not(summary)'));
    const names = controls.map(el => el.name || el.getAttribute('aria-label') || el.textContent.trim().slice(0, 20));
    const signature = location.pathname.replace(/\\d+/g, 'N') + ' ' + (form.getAttribute('action') || '') + ' ' + names.join(',');
    if (!controls.length || seen.includes(signature)) return;
    const groups = {};
    let n = 0;
    for (const el of controls) {
      if (el.type === 'radio' && el.name) {
        if (!(el.name in groups)) groups[el.name] = n++;
        el.dataset.walkStop = f + '-' + groups[el.name];
      } else el.dataset.walkStop = f + '-' + n++;
    }
    found.push({form: f, stops: n, signature, label: form.id || form.getAttribute('action') || form.className || 'form ' + f});
  });
  return found;
}"""

# Every element the focus lands on, from now on: its stop, and whether a reader
# sees where the focus is (an outline or a ring, on it or on its label), read as
# it lands (the ring goes with the focus).
FOCUS_WATCH = """() => {
  window.__walkFocus = [];
  if (window.__walkWatching) return;
  window.__walkWatching = true;
  const ring = node => {
    if (!node) return false;
    const style = getComputedStyle(node);
    return (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0) || style.boxShadow !== 'none';
  };
  document.addEventListener('focusin', event => {
    const el = event.target;
    const box = el.getBoundingClientRect();
    window.__walkFocus.push({
      stop: (el.dataset && el.dataset.walkStop) || null,
      visible: box.width > 0 && box.height > 0 && (ring(el) || ring(el.closest('label'))),
      what: el.tagName.toLowerCase() + (el.name ? '[name=' + el.name + ']' : '') + (el.id ? '#' + el.id : ''),
    });
  }, true);
}"""


LEFT_FIRST_STOP = """(f) => {
  const el = document.activeElement;
  return !el || !el.dataset || el.dataset.walkStop !== f + '-0';
}"""


def _tab_through(page, f: int, n: int) -> tuple[list[int], list[str]]:
    """Tab from the form's first stop until the focus leaves the form: the stops
    reached in turn, and those whose focus cannot be seen. Keys go in batches
    (a date field takes a Tab per part, with no focus change)."""
    reached: list[int] = []
    unseen: list[str] = []
    presses, limit = 0, 2 * n + 12
    while presses < limit:
        for _ in range(min(n + 1, limit - presses)):
            page.keyboard.press("Tab")
            presses += 1
        reached, unseen = [], []
        for landed in page.evaluate("() => window.__walkFocus"):
            stop = landed["stop"]
            if stop is None or not stop.startswith(f"{f}-"):
                return reached, unseen
            index = int(stop.split("-")[1])
            if not reached or reached[-1] != index:
                reached.append(index)
                if not landed["visible"]:
                    unseen.append(landed["what"])
    return reached, unseen


def forms_keyboard_problems(page, seen: set[str]) -> list[str]:
    """Tab from each form's first control: every control is reached, in the
    document's order, and the focus can be seen on each. A form seen on an
    earlier page (the same controls on the same kind of address) is not walked again."""
    problems: list[str] = []
    for form in page.evaluate(FORMS_MARK, sorted(seen)):
        seen.add(form["signature"])
        f, n = form["form"], form["stops"]
        page.evaluate(FOCUS_WATCH)
        page.evaluate("(f) => document.querySelector(`[data-walk-stop='${f}-0']`).focus()", str(f))
        # From the control before it, so that this is the keyboard's focus (a date
        # field takes a Shift+Tab per part before the focus leaves it).
        for _ in range(8):
            page.keyboard.press("Shift+Tab")
            if page.evaluate(LEFT_FIRST_STOP, str(f)):
                break
        page.evaluate("() => { window.__walkFocus = []; }")
        page.keyboard.press("Tab")
        reached, unseen = _tab_through(page, f, n)
        problems += [f"{form['label']}: no visible focus on {what}" for what in unseen]
        if reached != list(range(n)):
            problems.append(
                f"{form['label']}: Tab reaches stops {reached}, not 0..{n - 1} in order"
            )
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    return problems
