"""The upload form's progress bar, watched from the browser: the upload tests
and the page walk both check that it was shown and reached 100."""

# Records every change of the upload form's progress bar in sessionStorage,
# which outlives the navigation to the submission page.
WATCH_PROGRESS = """
document.addEventListener("DOMContentLoaded", () => {
  const bar = document.getElementById("upload-progress");
  if (!bar) return;
  new MutationObserver(() => {
    const seen = JSON.parse(sessionStorage.getItem("progress") || "[]");
    seen.push([bar.hidden, Number(bar.value)]);
    sessionStorage.setItem("progress", JSON.stringify(seen));
  }).observe(bar, {attributes: true});
});
"""


def progress_seen(page) -> list[tuple[bool, float]]:
    """What WATCH_PROGRESS recorded: the bar's (hidden, value) at each change."""
    return page.evaluate("JSON.parse(sessionStorage.getItem('progress') || '[]')")
