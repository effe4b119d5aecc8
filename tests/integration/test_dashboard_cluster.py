"""The dashboard's pages over a real apiserver (``trainjob --backend kubernetes dashboard``), in
headless Chromium: the same Jobs page, job page and Runtimes page as locally, through the
Kubernetes executor with the kubeconfig's own credentials.

No JobSet controller or kubelet runs in this control plane, so the test plays them (as
tests/integration/test_front_ends_cluster.py does): it creates the pod a JobSet would, writes the
``trainerStatus`` the status endpoint would, and the Complete condition. A cluster keeps only the
latest progress report (as upstream), so the page's loss curve holds the reports it saw.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.e2e.dashboard_browser import assert_not_blank, screenshot, start_dashboard, stop, until
from tests.integration.test_front_ends_cluster import complete, start_pod, trainjob

from trainjob.core import times
from trainjob.kube import Client
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration


def report(kube: Client, ns: str, name: str, progress: int, loss: float) -> None:
    """A progress report, as the controller's status endpoint patches it."""
    status = {
        "progressPercentage": progress,
        "estimatedRemainingSeconds": 100 - progress,
        "metrics": [{"name": "loss", "value": str(loss)}],
        "lastUpdatedTime": times.now(),
    }
    kube.patch_status(r.TRAINJOBS, name, ns, {"trainerStatus": status})


def test_the_pages_over_a_cluster(
    control_plane: ControlPlane,
    kube: Client,
    namespace: str,
    torch_runtime: str,
    browser: Any,
    tmp_path: Path,
) -> None:
    env = {"KUBECONFIG": "", "TRAINJOB_BACKEND": ""}
    d = start_dashboard(
        tmp_path / "home",
        "--backend",
        "kubernetes",
        "--kubeconfig",
        str(control_plane.kubeconfig),
        env=env,
    )
    try:
        assert "kubernetes backend" in "".join(d.output)
        jobs = browser.new_page(viewport={"width": 1300, "height": 900})
        jobs.goto(d.url + "/?namespace=" + namespace)
        kube.create(r.TRAINJOBS, trainjob("web"), namespace)
        key = f"{namespace}/web"
        row = jobs.locator(f"tr[data-key='{key}']")
        until("the job's row", lambda: row.count() == 1, 30)
        assert row.locator("td.ns").text_content() == namespace
        assert row.locator("td.runtime").text_content() == torch_runtime
        until("Created", lambda: row.locator("[data-phase='Created']").count() == 1, 30)
        pod = start_pod(kube, namespace, "web", 0)
        until("Running", lambda: row.locator("[data-phase='Running']").count() == 1, 30)
        report(kube, namespace, "web", 40, 1.5)
        until("40% and the loss", lambda: row.locator("td.loss").text_content() == "1.5", 30)
        assert row.locator(".bar .pct").text_content() == "40%"

        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.goto(d.url + f"/jobs/{namespace}/web")
        chart = page.locator(".chart[data-metric='loss']")
        until("a loss curve", lambda: chart.get_attribute("data-points") == "1", 30)
        time.sleep(1.1)  # lastUpdatedTime has seconds: the next report is a new one
        report(kube, namespace, "web", 80, 0.75)
        until("its second point", lambda: chart.get_attribute("data-points") == "2", 30)
        assert chart.get_attribute("data-last") == "0.75"
        assert page.locator("#steps tr[data-step='node-0']").count() == 1
        page.locator("#yaml", has_text="kind: TrainJob").wait_for()
        complete(kube, namespace, "web", pod)
        until("Complete", lambda: page.locator("#head [data-phase='Complete']").count() == 1, 30)
        until(
            "Complete on the Jobs page",
            lambda: row.locator("[data-phase='Complete']").count() == 1,
            30,
        )
        assert_not_blank(browser, screenshot(page, "job-cluster.png"))

        # The plan a TrainJob on that runtime gets, from the cluster's runtime.
        rts = browser.new_page(viewport={"width": 1300, "height": 900})
        rts.goto(d.url + "/runtimes")
        rts.click(f"button[data-plan='{torch_runtime}']")
        rts.locator("#runtime-text", has_text="kind: JobSet").wait_for(timeout=30_000)

        page.click("#action-delete")
        until("the confirmation", page.locator("dialog#confirm").is_visible, 10)
        page.click("#confirm-cancel")
        assert kube.get(r.TRAINJOBS, "web", namespace)["metadata"]["name"] == "web"
        page.click("#action-delete")
        page.click("#confirm-ok")
        until("the row gone", lambda: row.count() == 0, 60)
    finally:
        stop(d)
