"""The dashboard in a real browser (Debian's headless Chromium, driven by Playwright) over a real
``trainjob dashboard`` process and real 2-node local jobs:

- the job appears on the Jobs page and its phase changes to Running, then Complete, without a
  reload (the pages' main frames navigate once);
- its log streams: lines show while the job still runs, to the end of the log;
- a log line that is HTML stays text (no element, no script);
- delete asks first: cancelling keeps the job, confirming deletes it and the row goes;
- screenshots of the pages are saved as artifacts (build/test-artifacts/dashboard/, or
  ``$TRAINJOB_TEST_ARTIFACTS``), and the browser checks they are not blank.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e import local_jobs
from tests.e2e.dashboard_browser import (
    Dashboard,
    assert_not_blank,
    screenshot,
    start_dashboard,
    stop,
    until,
)

from trainjob.local.executor import LocalExecutor

pytestmark = pytest.mark.e2e

HOSTILE = "<img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>"

# A 2-node job that prints a tick every half second for about 8 s, and a line of HTML.
TICKS = f"""
import os, time
print({HOSTILE!r}, flush=True)
for step in range(16):
    print(f"tick {{step}} node {{os.environ['INDEX']}}", flush=True)
    time.sleep(0.5)
print("done", flush=True)
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def dashboard(home: Path) -> Iterator[Dashboard]:
    d = start_dashboard(home)
    try:
        yield d
    finally:
        stop(d)


def phase_of(page: Any, key: str) -> str:
    cell = page.locator(f"tr[data-key='{key}'] td.phase-cell")
    return str(cell.text_content(timeout=2000) or "") if cell.count() else ""


def open_page(browser: Any, url: str, problems: list[str]) -> tuple[Any, list[str]]:
    """A page at ``url``, and the list of its main frame's navigations (a reload adds one)."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    navigations: list[str] = []
    page.on("framenavigated", lambda f: navigations.append(f.url) if f == page.main_frame else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(url)
    return page, navigations


def test_a_running_job_in_the_browser(
    home: Path, dashboard: Dashboard, browser: Any, tmp_path: Path
) -> None:
    ex = LocalExecutor(home)
    problems: list[str] = []
    jobs, jobs_navigations = open_page(browser, dashboard.url + "/", problems)
    jobs.locator("#count").wait_for()
    assert jobs.locator("tr[data-key]").count() == 0

    ex.submit(
        local_jobs.trainjob("ticks", TICKS, nodes=2), [local_jobs.runtime()], cwd=str(tmp_path)
    )
    key = "default/ticks"
    until("the job's row", lambda: jobs.locator(f"tr[data-key='{key}']").count() == 1, 30)
    assert phase_of(jobs, key) in ("Created", "Running"), phase_of(jobs, key)
    until("Running on the Jobs page", lambda: phase_of(jobs, key) == "Running", 90)
    assert jobs.locator(f"tr[data-key='{key}'] td.nodes").text_content() == "2"

    # The job's page while it runs: the log streams.
    page, navigations = open_page(browser, dashboard.url + "/jobs/default/ticks", problems)
    log = page.locator("#log")
    until("log lines while running", lambda: "tick 1 " in (log.text_content() or ""), 60)
    assert ex.state("ticks", "default").phase == "Running"  # streamed, not read at the end
    assert page.locator("#steps tr[data-step]").count() == 2
    until(
        "Complete on the job's page",
        lambda: page.locator("#head [data-phase='Complete']").count() == 1,
        120,
    )
    until("Complete on the Jobs page", lambda: phase_of(jobs, key) == "Complete", 30)
    until(
        "the end of the log", lambda: page.locator("#log-state").text_content() == "end of log", 30
    )
    text = log.text_content() or ""
    assert "tick 15 node 0" in text and text.rstrip().endswith("done")
    # A log line of HTML is shown as text: no element made, no script run.
    assert HOSTILE in text
    assert page.locator("#log img, #log script").count() == 0
    assert page.title() != "pwned"
    page.locator("#yaml", has_text="kind: TrainJob").wait_for()
    for name, p in (("jobs.png", jobs), ("job-ticks.png", page)):
        assert_not_blank(browser, screenshot(p, name))
    # Both pages changed in place: no reload, no navigation but the first.
    assert len(jobs_navigations) == 1, jobs_navigations
    assert len(navigations) == 1, navigations

    # Delete asks first: Cancel keeps the job; Delete in the dialog deletes it.
    page.click("#action-delete")
    dialog = page.locator("dialog#confirm")
    until("the confirmation", dialog.is_visible, 10)
    assert "Delete TrainJob default/ticks?" in (dialog.text_content() or "")
    page.click("#confirm-cancel")
    assert not dialog.is_visible()
    assert ex.exists("ticks", "default")
    page.click("#action-delete")
    page.click("#confirm-ok")
    until("the job deleted", lambda: not ex.exists("ticks", "default"), 60)
    page.wait_for_url(dashboard.url + "/", timeout=30_000)  # the page goes back to the Jobs
    until("the row gone", lambda: jobs.locator(f"tr[data-key='{key}']").count() == 0, 30)
    assert problems == []
