"""The dashboard's pages on the whole test cluster (``trainjob --backend kubernetes dashboard``), in
headless Chromium: a 2-node TrainJob that really runs (trainjob's controller makes its JobSet, the
JobSet and Job controllers its pods, kube-scheduler binds them to KWOK's nodes, KWOK runs them
Running, then Succeeded), watched through the Kubernetes executor with the kubeconfig's own
credentials:

- the Jobs page: the row appears, Running, then Complete, without a reload, with its namespace,
  runtime and 2 nodes;
- the job's page: its 2 pods as steps (scheduled, Running), its phases over time ending with
  Running while it runs, then with Complete; the curve of a progress report (written as the
  controller's status endpoint writes it: KWOK's pods run no code); the TrainJob as YAML;
- the Runtimes page: the Plan a TrainJob on torch-distributed gets, from the cluster's runtime;
- delete asks first, then the TrainJob goes (and the cluster collects what it owned).

KWOK serves no pod logs (no kubelet): the log pane is pinned by the local browser test
(tests/e2e/test_dashboard_browser.py) and by tests/integration/test_dashboard_cluster.py.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.cluster import kit
from tests.cluster.test_cli_sdk import cli
from tests.e2e.dashboard_browser import (
    assert_not_blank,
    phases_on,
    screenshot,
    start_dashboard,
    stop,
    until,
)
from trainjob.core import times
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.cluster.conftest import Cluster

pytestmark = pytest.mark.usefixtures("controller")


def test_the_pages_on_the_whole_cluster(
    cluster: Cluster, ns: str, browser: Any, tmp_path: Path
) -> None:
    kube = cluster.kube
    d = start_dashboard(
        tmp_path / "home",
        "--backend",
        "kubernetes",
        "--kubeconfig",
        str(cluster.kubeconfig),
        env={"KUBECONFIG": "", "TRAINJOB_BACKEND": ""},
    )
    problems: list[str] = []
    try:
        assert "kubernetes backend" in "".join(d.output)
        jobs = browser.new_page(viewport={"width": 1300, "height": 900})
        jobs_nav: list[str] = []
        jobs.on(
            "framenavigated", lambda f: jobs_nav.append(f.url) if f == jobs.main_frame else None
        )
        jobs.on("pageerror", lambda e: problems.append(str(e)))
        jobs.goto(d.url + "/?namespace=" + ns)
        jobs.locator("#count").wait_for()

        kube.create(
            r.TRAINJOBS, kit.trainjob("web", num_nodes=2, pods={kit.RUN_FOR: kit.RUNNING}), ns
        )
        row = jobs.locator(f"tr[data-key='{ns}/web']")
        until("the job's row", lambda: row.count() == 1, 60)
        assert row.locator("td.ns").text_content() == ns
        assert row.locator("td.runtime").text_content() == "torch-distributed"
        assert row.locator("td.nodes").text_content() == "2"
        until("Running", lambda: row.locator("[data-phase='Running']").count() == 1, 60)

        page = browser.new_page(viewport={"width": 1300, "height": 900})
        nav: list[str] = []
        page.on("framenavigated", lambda f: nav.append(f.url) if f == page.main_frame else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(d.url + f"/jobs/{ns}/web")
        steps = page.locator("#steps tr[data-step]")
        until("its 2 pods as steps", lambda: steps.count() == 2, 60)
        assert page.locator("#steps tr[data-step='node-0']").count() == 1
        until("Running on the timeline", lambda: phases_on(page)[-1:] == ["Running"], 60)
        assert phases_on(page)[0] == "Created"
        # A progress report, as the controller's status endpoint patches it.
        status = {
            "progressPercentage": 50,
            "estimatedRemainingSeconds": 7,
            "metrics": [{"name": "loss", "value": "0.5"}],
            "lastUpdatedTime": times.now(),
        }
        kube.patch_status(r.TRAINJOBS, "web", ns, {"trainerStatus": status})
        chart = page.locator(".chart[data-metric='loss']")
        until("a loss curve", lambda: chart.get_attribute("data-points") == "1", 60)
        until(
            "the loss on the Jobs page", lambda: row.locator("td.loss").text_content() == "0.5", 30
        )
        page.locator("#yaml", has_text="kind: TrainJob").wait_for()

        kit.wait_condition(kube, "web", ns, "Complete", timeout=180)
        until("Complete", lambda: page.locator("#head [data-phase='Complete']").count() == 1, 60)
        until("Complete on the timeline", lambda: phases_on(page)[-1:] == ["Complete"], 30)
        seen = phases_on(page)
        assert seen[0] == "Created" and seen[-2:] == ["Running", "Complete"], seen
        until(
            "Complete on the Jobs page",
            lambda: row.locator("[data-phase='Complete']").count() == 1,
            30,
        )
        # the last report outlives Complete: the controller's status writes (a merge patch of
        # its conditions and times) leave the status endpoint's trainerStatus as it is; the
        # page and get jobs -o wide show it
        got = kube.get(r.TRAINJOBS, "web", ns)["status"]["trainerStatus"]
        assert got["progressPercentage"] == 50 and got["metrics"] == status["metrics"], got
        assert row.locator("td.loss").text_content() == "0.5"
        assert row.locator(".bar .pct").text_content() == "50%"
        wide = cli(cluster, ns, "get", "jobs", "web", "-o", "wide")
        assert wide.returncode == 0, wide.stderr
        [header, line] = wide.stdout.strip().splitlines()
        cells = dict(zip(header.split(), line.split(), strict=True))
        assert cells["STATUS"] == "Complete" and cells["PROGRESS"] == "50%", wide.stdout
        assert cells["LOSS"] == "0.5" and cells["ETA"] == "<none>", wide.stdout
        assert_not_blank(browser, screenshot(page, "job-cluster-full.png"))
        assert_not_blank(browser, screenshot(jobs, "jobs-cluster-full.png"))
        assert len(jobs_nav) == 1 and len(nav) == 1, (jobs_nav, nav)  # all in place

        rts = browser.new_page(viewport={"width": 1300, "height": 900})
        rts.goto(d.url + "/runtimes")
        rts.click("button[data-plan='torch-distributed']")
        rts.locator("#runtime-text", has_text="kind: JobSet").wait_for(timeout=30_000)

        page.click("#action-delete")
        until("the confirmation", page.locator("dialog#confirm").is_visible, 10)
        page.click("#confirm-cancel")
        time.sleep(0.5)
        assert kube.get(r.TRAINJOBS, "web", ns)["metadata"]["name"] == "web"
        page.click("#action-delete")
        page.click("#confirm-ok")
        until("the row gone", lambda: row.count() == 0, 60)
        until("the TrainJob gone", lambda: kube.get_or_none(r.TRAINJOBS, "web", ns) is None, 60)
        assert problems == []
    finally:
        stop(d)
