"""The Jobs page with many jobs, in a real browser (Debian's headless Chromium) over a real
``trainjob dashboard``: it draws the newest 200 rows that pass the filters (a browser takes
seconds to lay out a thousand, and the page redraws as jobs change), says how many it does not
show, and "Show older" draws 200 more each time; a filter counts every job, drawn or not; a new
job appears at the bottom, drawn, without a reload. The jobs are written into the store
(tests/stored_jobs.py), as benchmarks/local_scale.py's are."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.dashboard_browser import Dashboard, start_dashboard, stop, until
from tests.stored_jobs import store_job

from trainjob.local.client.executor import LocalExecutor

pytestmark = pytest.mark.e2e
JOBS = 450


@pytest.fixture
def dashboard(tmp_path: Path) -> Iterator[tuple[Dashboard, LocalExecutor]]:
    ex = LocalExecutor(tmp_path / "home")
    for i in range(JOBS):
        store_job(ex, f"job-{i:04d}", phase="Failed" if i % 10 == 0 else "Complete")
    d = start_dashboard(tmp_path / "home")
    try:
        yield d, ex
    finally:
        stop(d)


def drawn(page: Any) -> list[str]:
    return [
        str(k) for k in page.eval_on_selector_all("#jobs tr", "rs => rs.map(r => r.dataset.key)")
    ]


def test_the_newest_rows_are_drawn_and_older_ones_on_demand(
    dashboard: tuple[Dashboard, LocalExecutor], browser: Any
) -> None:
    d, ex = dashboard
    problems: list[str] = []
    page = browser.new_page()
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(d.url + "/")
    until("the rows", lambda: len(drawn(page)) == 200, 60)
    # the newest 200, oldest first as listed: job-0250 .. job-0449
    assert drawn(page) == [f"default/job-{i:04d}" for i in range(250, JOBS)]
    count = page.locator("#count")
    assert count.text_content() == f"{JOBS} of {JOBS} jobs, the newest 200 shown"
    older = page.locator("#older")
    assert older.text_content() == "Show 200 older (250 not shown)"
    older.click()
    until("400 rows", lambda: len(drawn(page)) == 400, 30)
    assert drawn(page)[0] == "default/job-0050"
    assert older.text_content() == "Show 50 older (50 not shown)"
    older.click()
    until("every row", lambda: len(drawn(page)) == JOBS, 30)
    assert older.is_hidden() and count.text_content() == f"{JOBS} of {JOBS} jobs"
    # a filter counts every job that passes it
    page.select_option("#filter-phase", "Failed")
    until("the Failed ones", lambda: len(drawn(page)) == JOBS // 10, 30)
    assert count.text_content() == f"{JOBS // 10} of {JOBS} jobs"
    assert all(k.endswith("0") for k in drawn(page))
    page.select_option("#filter-phase", "")
    until("every row again", lambda: len(drawn(page)) == JOBS, 30)
    # a new job: drawn at the bottom, without a reload
    store_job(ex, "newest")
    until("the new job's row", lambda: drawn(page)[-1:] == ["default/newest"], 30)
    assert problems == []
