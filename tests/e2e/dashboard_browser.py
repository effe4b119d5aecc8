"""What the dashboard's browser tests share: a real ``trainjob dashboard`` process on a fresh
``$TRAINJOB_HOME``, Debian's headless Chromium driven by Playwright (``executable_path``: no
browser download), screenshots saved as artifacts and checked not blank by the browser itself.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("TRAINJOB_TEST_ARTIFACTS", ROOT / "build" / "test-artifacts"))
CHROMIUM_ARGS = [
    # As root in a container: no sandbox; this machine's closed network: no background traffic.
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


@dataclass
class Dashboard:
    url: str
    proc: subprocess.Popen[str]
    output: list[str]


def start_dashboard(home: Path, *args: str, env: dict[str, str] | None = None) -> Dashboard:
    """``trainjob dashboard --port 0`` on ``home``; its URL once it listens."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainjob", *args, "dashboard", "--port", "0"],
        env={**os.environ, "TRAINJOB_HOME": str(home), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        output.append(line)
        m = re.search(r"(http://\S+)", line)
        if m:
            return Dashboard(m.group(1).rstrip("/"), proc, output)
    proc.kill()
    raise AssertionError("the dashboard printed no URL:\n" + "".join(output))


def stop(d: Dashboard) -> None:
    d.proc.terminate()
    try:
        d.proc.wait(10)
    except subprocess.TimeoutExpired:
        d.proc.kill()
        d.proc.wait(10)


def launch() -> Iterator[Any]:
    """Headless Chromium (the ``browser`` fixture of tests/e2e/conftest.py)."""
    if not Path(CHROMIUM).exists():
        pytest.skip("no chromium here: bash scripts/setup-browser.sh installs Debian's")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def until(what: str, check: Callable[[], Any], timeout: float = 60.0, every: float = 0.2) -> Any:
    """Poll ``check`` until it returns something true; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)


def screenshot(page: Any, name: str, *, full_page: bool = True) -> Path:
    """A PNG of the page (the whole of it, or what the window shows) under the artifacts."""
    path = ARTIFACTS / "dashboard" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=full_page)
    return path


PIXELS_JS = """async (src) => {
  const img = new Image();
  img.src = src;
  await img.decode();
  const c = document.createElement('canvas');
  c.width = img.width; c.height = img.height;
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data;
  const counts = new Map();
  for (let i = 0; i < d.length; i += 4) {
    const k = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2];
    counts.set(k, (counts.get(k) || 0) + 1);
  }
  let top = 0;
  for (const v of counts.values()) top = Math.max(top, v);
  return {width: c.width, height: c.height, colors: counts.size, top: top / (d.length / 4)};
}"""


def pixels(browser: Any, png: Path) -> dict[str, Any]:
    """The PNG decoded by the browser (a blank page of its own, no dashboard CSP): its size,
    how many colours it has and the share of the commonest."""
    import base64

    page = browser.new_page()
    try:
        src = "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()
        result: dict[str, Any] = page.evaluate(PIXELS_JS, src)
        return result
    finally:
        page.close()


def assert_not_blank(browser: Any, png: Path) -> None:
    p = pixels(browser, png)
    assert p["width"] >= 800 and p["height"] >= 400, p
    assert p["colors"] >= 50, f"{png}: {p['colors']} colours: a blank or almost blank page"
    assert p["top"] < 0.9, f"{png}: {p['top']:.0%} of it one colour"


def phases_on(page: Any) -> list[str]:
    """The phases of a job page's timeline bar, in order."""
    segments = page.locator("#timeline .seg")
    return [str(segments.nth(i).get_attribute("data-phase")) for i in range(segments.count())]
