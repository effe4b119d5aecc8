"""A sweep (OptimizationJob) in a real browser (Debian's headless Chromium, driven by Playwright)
over a real ``trainjob dashboard`` process and the real local SweepExecutor, on a finished sweep
and its trial TrainJobs stored as its supervisor leaves them (tests/stored_jobs.py):

- the Jobs page lists it with a link to its page, its best objective as a person reads it;
- its page: the trials in index order, sorted by the objective best first (then worst first),
  the trial without an objective last either way; the best one marked; metric values and
  parameters as a person reads them (0.9, not 0.8999999999999999); each parameter against the
  objective as a plot with a point per trial that reported, the best one marked, each linking to
  its trial; the trial's page links back to the sweep;
- a screenshot of the page is saved as an artifact and checked not blank.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.dashboard_browser import (
    Dashboard,
    assert_not_blank,
    screenshot,
    start_dashboard,
    stop,
    until,
)
from tests.stored_jobs import store_sweep

from trainjob.local.client.executor import LocalExecutor

pytestmark = pytest.mark.e2e

# lr, batch -> loss: tune-3 is the best (0.30000000000000004 reads 0.3), tune-2 failed.
TRIALS = [
    ({"lr": "0.1", "batch": "32"}, "0.8999999999999999", "Succeeded"),
    ({"lr": "0.01", "batch": "64"}, "0.5", "Succeeded"),
    ({"lr": "0.0001", "batch": "32"}, None, "Failed"),
    ({"lr": "0.0031622776601683794", "batch": "16"}, "0.30000000000000004", "Succeeded"),
    ({"lr": "0.001", "batch": "64"}, "1.25", "Succeeded"),
]
PARAMETERS = [
    {"name": "lr", "searchSpace": {"logUniform": {"min": "1e-4", "max": "0.1"}}},
    {"name": "batch", "searchSpace": {"categorical": {"choices": ["16", "32", "64"]}}},
]


@pytest.fixture
def dashboard(tmp_path: Path) -> Iterator[Dashboard]:
    home = tmp_path / "home"
    store_sweep(LocalExecutor(home), "tune", TRIALS, parameters=PARAMETERS)
    d = start_dashboard(home)
    try:
        yield d
    finally:
        stop(d)


def trial_order(page: Any) -> list[str]:
    rows = page.locator("#trials tbody tr")
    return [str(rows.nth(i).get_attribute("data-trial")) for i in range(rows.count())]


def cell(page: Any, trial: str, which: str) -> str:
    return str(page.locator(f"#trials tr[data-trial='{trial}'] td.{which}").text_content())


def test_a_sweeps_page_in_the_browser(dashboard: Dashboard, browser: Any) -> None:
    problems: list[str] = []
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.on("pageerror", lambda e: problems.append(str(e)))

    # The Jobs page: the sweep, with a link to its page, and its trials among the jobs.
    page.goto(dashboard.url + "/")
    row = page.locator("#sweeps tr[data-key='default/tune']")
    row.wait_for(timeout=30000)
    assert row.locator("td.trials").text_content() == "5/5"
    assert row.locator("td.best").text_content() == "0.3"
    assert row.locator("td.best-trial a").get_attribute("href") == "/jobs/default/tune-3"
    until("the trials among the jobs", lambda: page.locator("#jobs tr[data-key]").count() == 5, 30)
    screenshot(page, "jobs-with-sweeps.png")
    row.locator("td.name a").click()
    page.wait_for_url("**/sweeps/default/tune")

    # The sweep's page: the trials in index order first.
    page.locator("#trials table.trials").wait_for(timeout=30000)
    assert trial_order(page) == ["tune-0", "tune-1", "tune-2", "tune-3", "tune-4"]
    assert page.locator("#head [data-phase='Complete']").count() == 1
    # Numbers as a person reads them, the exact value in the title.
    assert cell(page, "tune-0", "objective") == "0.9"
    assert cell(page, "tune-3", "objective") == "0.3"
    assert cell(page, "tune-2", "objective") == ""
    lr = page.locator("#trials tr[data-trial='tune-3'] td[data-param='lr']")
    assert lr.text_content() == "0.00316227766016838"
    assert lr.get_attribute("title") == "0.0031622776601683794"
    objective = page.locator("#trials tr[data-trial='tune-0'] td.objective")
    assert objective.get_attribute("title") == "0.8999999999999999"
    # The best marked, once.
    best = page.locator("#trials tr[data-best='true']")
    assert best.count() == 1 and best.get_attribute("data-trial") == "tune-3"
    assert "★ best" in str(best.text_content())
    assert page.locator("#best-link").get_attribute("href") == "/jobs/default/tune-3"
    assert page.locator("#best-objective").text_content() == "0.3"

    # Sorted by the objective: best first (loss is minimized), the failed trial last.
    page.locator("#sort-objective").click()
    assert trial_order(page) == ["tune-3", "tune-1", "tune-0", "tune-4", "tune-2"]
    assert "best first" in str(page.locator("#sort-objective").text_content())
    # Again: worst first, the failed trial still last.
    page.locator("#sort-objective").click()
    assert trial_order(page) == ["tune-4", "tune-0", "tune-1", "tune-3", "tune-2"]
    page.locator("#sort-index").click()
    assert trial_order(page)[0] == "tune-0"

    # Each parameter against the objective: a point per trial that reported, linking to it.
    for param in ("lr", "batch"):
        fig = page.locator(f"figure.scatter[data-param='{param}']")
        assert fig.get_attribute("data-points") == "4"
        assert fig.locator("circle").count() == 4
        assert fig.locator("circle[data-best='true']").count() == 1
        links = fig.locator("svg a")
        hrefs = {links.nth(i).get_attribute("href") for i in range(links.count())}
        assert hrefs == {f"/jobs/default/tune-{i}" for i in (0, 1, 3, 4)}
        best_title = fig.locator("circle[data-best='true'] title").text_content()
        assert str(best_title).startswith("tune-3: ") and str(best_title).endswith("loss=0.3")
    # Lower loss is drawn higher up: the best point is the highest one on the page... no: lower
    # values sit lower; the best (0.3) has the largest cy of the lr plot's points.
    cys = page.eval_on_selector_all(
        "figure.scatter[data-param='lr'] circle",
        "cs => cs.map(c => [c.dataset.best === 'true', Number(c.getAttribute('cy'))])",
    )
    best_cy = next(cy for is_best, cy in cys if is_best)
    assert best_cy == max(cy for _, cy in cys), cys
    # The log axis: lr's ticks are powers of ten.
    ticks = page.locator("figure.scatter[data-param='lr'] text.tick").all_text_contents()
    assert "0.01" in ticks, ticks
    png = screenshot(page, "sweep.png")
    assert_not_blank(browser, png)

    # A trial's link opens its page, which links back to its sweep.
    page.locator("#trials tr[data-trial='tune-1'] td.name a").click()
    page.wait_for_url("**/jobs/default/tune-1")
    back = page.locator("#sweep-link")
    back.wait_for(timeout=30000)
    assert back.get_attribute("href") == "/sweeps/default/tune"
    assert page.locator("#crumbs a[href='/sweeps/default/tune']").count() == 1
    # The job page's reported metric formatted too (the stored report is 0.5).
    metric = page.locator("#progress table.metrics td.num")
    assert metric.first.text_content() == "0.5"
    screenshot(page, "trial.png")
    assert problems == []


# A real sweep: 3 trials at once, each a TrainJob run here whose loss is x * 0.3, maximized
# (the best, x=3, reports 0.8999999999999999: a double's noise that reads 0.9).
REAL = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: OptimizationJob
metadata:
  name: gain
spec:
  objectives:
  - metric: gain
    direction: Maximize
  searchAlgorithm:
    grid: {}
  numTrials: 3
  parallelTrials: 3
  parameters:
  - name: x
    searchSpace:
      categorical:
        choices: ["1", "2", "3"]
  trainJobTemplate:
    spec:
      runtimeRef:
        name: torch-distributed
      trainer:
        command:
        - python
        - -c
        - "import trainjob; trainjob.update_trainjob_status(metrics={'gain': {{.x}} * 0.3})"
"""


def test_a_real_sweep_run_here_finishes_on_its_page(tmp_path: Path, browser: Any) -> None:
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    d = start_dashboard(home)
    try:
        problems: list[str] = []
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(d.url + "/")
        page.locator("#count").wait_for()
        (tmp_path / "gain.yaml").write_text(REAL)
        run = subprocess.run(
            [sys.executable, "-m", "trainjob", "run", "-f", "gain.yaml"],
            env={**os.environ, "TRAINJOB_HOME": str(home), "TRAINJOB_BACKEND": "local"},
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        link = page.locator("#sweeps tr[data-key='default/gain'] td.name a")
        link.wait_for(timeout=30000)  # the Jobs page reads the sweeps again by itself
        link.click()
        page.wait_for_url("**/sweeps/default/gain")
        # The page follows the sweep to its end by itself.
        until(
            "Complete on the sweep's page",
            lambda: page.locator("#head [data-phase='Complete']").count() == 1,
            180,
        )
        assert page.locator("#trials tbody tr").count() == 3
        page.locator("#sort-objective").click()
        order = [
            (
                cell(page, t, "objective"),
                page.locator(f"#trials tr[data-trial='{t}'] td[data-param='x']").text_content(),
            )
            for t in trial_order(page)
        ]
        assert order == [("0.9", "3"), ("0.6", "2"), ("0.3", "1")], order
        best = page.locator("#trials tr[data-best='true']")
        assert best.count() == 1 and best.get_attribute("data-trial") == trial_order(page)[0]
        fig = page.locator("figure.scatter[data-param='x']")
        assert fig.locator("circle").count() == 3
        assert fig.locator("circle[data-best='true']").count() == 1
        assert "higher is better" in str(fig.locator("figcaption").text_content())
        png = screenshot(page, "sweep-real.png")
        assert_not_blank(browser, png)
        best.locator("td.name a").click()
        page.locator("#sweep-link").wait_for(timeout=30000)
        assert page.locator("#progress table.metrics td.num").first.text_content() == "0.9"
        assert problems == []
    finally:
        stop(d)


def test_values_read_as_a_person_reads_them_and_a_missing_sweep_says_so(
    dashboard: Dashboard, browser: Any
) -> None:
    """TJ.number, the one formatter of the pages' values, in the browser; a sweep not there."""
    page = browser.new_page()
    page.goto(dashboard.url + "/sweeps/default/nope")
    page.locator("#gone").wait_for(timeout=30000)
    assert page.locator("#gone").text_content() == "Not found"
    cases = [
        ("0.8999999999999999", None, "0.9"),
        (0.30000000000000004, None, "0.3"),
        ("0.0031622776601683794", None, "0.00316227766016838"),
        ("1e-7", None, "1e-7"),
        ("1e-4", None, "0.0001"),
        ("12.5", None, "12.5"),
        ("10.0", None, "10"),
        ("-2", None, "-2"),
        ("123456789012345678", None, "123456789012346000"),
        ("nan", None, "nan"),
        ("n/a", None, "n/a"),
        ("0x10", None, "0x10"),
        ("", None, ""),
        ("0.731234", 4, "0.7312"),
    ]
    got = page.evaluate(
        "cases => cases.map(([v, d]) => TJ.number(v, d === null ? undefined : d))",
        [[v, d] for v, d, _ in cases],
    )
    assert got == [want for _, _, want in cases]
