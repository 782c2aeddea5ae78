"""The browser side of the JupyterLab tests (test_lab_browser.py,
test_lab_browser_shared_pool.py): Debian's chromium under Playwright, a page of a
:class:`tests.lab_browser.LabServer`, and what the tests read off the page."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
from playwright import sync_api as playwright   # the test extra installs it

from tests import lab_browser
from tests.paths import PROJECT_ROOT

expect = playwright.expect

SHOTS = Path(os.environ.get("GPUWB_SCREENSHOTS")
             or PROJECT_ROOT / "build" / "browser-test")
RUN_ALL = "window.jupyterapp.commands.execute('notebook:run-all-cells')"
KERNEL_IDLE = """() => {
  const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const kernel = widget && widget.sessionContext && widget.sessionContext.session
                 && widget.sessionContext.session.kernel;
  return kernel && kernel.status === 'idle' && widget.sessionContext.kernelDisplayName;
}"""
OPS_ABOVE = """n => [...document.querySelectorAll('[data-gpuwb=sessions] [data-gpuwb=ops]')]
                .reduce((sum, cell) => sum + Number(cell.textContent), 0) > n"""


@contextlib.contextmanager
def chromium():
    """Debian's chromium under Playwright, for one test. (Not a module fixture: Playwright's
    sync API keeps its event loop running between calls, and pytest-jupyter's autouse
    loop fixture, loaded by the server-extension tests, would find and close it.)"""
    try:
        executable = lab_browser.chromium()
        lab_browser.lab_extension_built()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    with playwright.sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=executable, headless=True,
                                        args=lab_browser.CHROMIUM_ARGS)
        except Exception as exc:  # noqa: BLE001 — any launch failure, with its reason
            pytest.fail(f"chromium ({executable}) did not start: {exc}", pytrace=False)
        try:
            yield browser
        finally:
            browser.close()


def clean_env(monkeypatch) -> dict[str, str]:
    """The test's own GPUWB_ settings only (none inherited from the shell running pytest;
    the test's own GPUWB_CHROMIUM and GPUWB_SCREENSHOTS stay)."""
    for name in [n for n in os.environ if n.startswith("GPUWB_")]:
        if name not in ("GPUWB_CHROMIUM", "GPUWB_SCREENSHOTS"):
            monkeypatch.delenv(name)
    return {}


def open_page(browser, lab: lab_browser.LabServer, path: str):
    page = browser.new_page(viewport={"width": 1500, "height": 950})
    page.goto(f"{lab.url}/lab/tree/{path}?token={lab.token}", wait_until="domcontentloaded")
    return page


def ops(page) -> int:
    """The Ops column of the panel's "Your sessions", summed."""
    cells = page.locator("[data-gpuwb=sessions] [data-gpuwb=ops]").all_inner_texts()
    return sum(int(c) for c in cells)
