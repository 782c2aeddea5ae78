"""JupyterLab in a real browser (issue 10): a JupyterLab started here, Debian's chromium
driven by Playwright, a notebook on the "Python 3 (remote GPU)" kernel running CuPy
cells on a real pool (the NumPy device), and the Lab extension's status-bar item, side
panel and catalogue checked as a user sees them. Screenshots are saved (GPUWB_SCREENSHOTS,
default build/browser-test/).

Three scenarios: one user on an embedded-style pool (in-process); no pool; and a shared
pool (``gpuwb-backend serve`` with a users file: alice in Lab, of weight 2 and a 256 MiB
memory quota, and bob from a script), where the panel shows both users and their weights
(alice's before her first session too), names alice's session by its notebook with its
idle time, warns near her quota and shows her out of memory, ends her session from its
End button, and, when the pool is killed, keeps its last figures marked stale with the
time they are from.

Chromium missing and not installable, or the Lab extension not built: the test fails
with the reason; it does not skip.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import pytest
from playwright import sync_api as playwright   # the test extra installs it

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.served import ServedPool
from kernelproxy.modules import module_for

from tests import lab_browser
from tests.gpu_backend.test_users_pool import MiB, write_users
from tests.paths import PROJECT_ROOT

expect = playwright.expect

SHOTS = Path(os.environ.get("GPUWB_SCREENSHOTS")
             or PROJECT_ROOT / "build" / "browser-test")
#: Generous: on a clean CI machine the first test may install chromium (apt-get, minutes).
pytestmark = pytest.mark.timeout(1200)

RUN_ALL = "window.jupyterapp.commands.execute('notebook:run-all-cells')"
KERNEL_IDLE = """() => {
  const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const kernel = widget && widget.sessionContext && widget.sessionContext.session
                 && widget.sessionContext.session.kernel;
  return kernel && kernel.status === 'idle' && widget.sessionContext.kernelDisplayName;
}"""
OPS_ABOVE = """n => [...document.querySelectorAll('[data-gpuwb=sessions] [data-gpuwb=ops]')]
                .reduce((sum, cell) => sum + Number(cell.textContent), 0) > n"""
CELLS = [
    "import cupy as cp\nx = cp.ones((256, 256))\nprint('device', cp.cuda.Device().id)",
    # 128 MiB held by the session, and some seconds of device time for the chart
    "y = cp.ones((4096, 4096))\nz = cp.ones((512, 512))\n"
    "for _ in range(60):\n    z = (z @ z) / 512.0\nprint('sum', float(z.sum()), y.nbytes)",
]


@contextlib.contextmanager
def _chromium():
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


def _clean_env(monkeypatch) -> dict[str, str]:
    """The test's own GPUWB_ settings only (none inherited from the shell running pytest;
    the test's own GPUWB_CHROMIUM and GPUWB_SCREENSHOTS stay)."""
    for name in [n for n in os.environ if n.startswith("GPUWB_")]:
        if name not in ("GPUWB_CHROMIUM", "GPUWB_SCREENSHOTS"):
            monkeypatch.delenv(name)
    return {}


def _open(browser, lab: lab_browser.LabServer, path: str):
    page = browser.new_page(viewport={"width": 1500, "height": 950})
    page.goto(f"{lab.url}/lab/tree/{path}?token={lab.token}", wait_until="domcontentloaded")
    return page


def _ops(page) -> int:
    """The Ops column of the panel's "Your sessions", summed."""
    cells = page.locator("[data-gpuwb=sessions] [data-gpuwb=ops]").all_inner_texts()
    return sum(int(c) for c in cells)


def test_lab_shows_the_pool_and_its_numbers_move(tmp_path, monkeypatch):
    env = _clean_env(monkeypatch)
    with LocalPool(devices="cpu") as pool, _chromium() as browser:
        token_file = tmp_path / "token"
        token_file.write_text(pool.token)
        env.update(GPUWB_POOL=pool.address, GPUWB_TOKEN_FILE=str(token_file))
        lab_browser.notebook(tmp_path / "gpu.ipynb", CELLS)
        lab = lab_browser.LabServer(tmp_path, env, ["--GpuWorkbench.poll_interval=0.5"])
        try:
            page = _open(browser, lab, "gpu.ipynb")
            item = page.locator("[data-gpuwb=status-item]")
            expect(item).to_contain_text("GPU: NumPy", timeout=60_000)
            assert page.wait_for_function(KERNEL_IDLE, timeout=120_000).json_value() \
                == "Python 3 (remote GPU)"
            item.click()   # opens the side panel
            panel = page.locator("#gpuwb-pool-panel")
            expect(panel).to_be_visible()
            expect(panel.locator("[data-gpuwb=devices]")).to_contain_text("NumPy (host CPU)")
            before_text, before_ops = item.inner_text(), _ops(page)

            page.evaluate(RUN_ALL)
            expect(page.locator(".jp-OutputArea-output").filter(has_text="sum ")).to_have_count(
                1, timeout=120_000)
            # the status bar: the session's 128 MiB (its share is measured over 10 s: not
            # asserted, a slow machine may see the window empty)
            expect(item).to_have_text(re.compile(r"GPU: NumPy · share \d+% · 0\.1\d* GiB"),
                                      timeout=20_000)
            assert item.inner_text() != before_text
            expect(panel.locator("[data-gpuwb=sessions] tbody tr")).to_have_count(1)
            page.wait_for_function(OPS_ABOVE, arg=before_ops, timeout=20_000)
            first_ops = _ops(page)
            expect(panel.locator("[data-gpuwb=users] tr.gpuwb-you")).to_contain_text("default (you)")
            bars = panel.locator("[data-gpuwb=chart] rect[data-user=default]")
            expect(bars.first).to_be_attached(timeout=20_000)   # the share chart has your columns
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "lab-pool-panel.png"))

            page.evaluate(RUN_ALL)   # again: the panel's numbers go on moving
            page.wait_for_function(OPS_ABOVE, arg=first_ops, timeout=60_000)

            # the catalogue: search, a card with its links
            panel.locator("[data-gpuwb=open-catalog]").click()
            count = page.locator("[data-gpuwb=catalog-count]")
            expect(count).to_have_text(re.compile(r"^(\d+) of \1 systems$"), timeout=20_000)
            total = int(count.inner_text().split()[0])
            page.locator("[data-gpuwb=catalog-search]").fill("preemption")
            expect(count).not_to_have_text(f"{total} of {total} systems", timeout=10_000)
            assert 0 < int(count.inner_text().split()[0]) < total
            page.locator(".gpuwb-system").first.click()
            links = page.locator("[data-gpuwb=catalog-links] a")
            expect(links.first).to_have_attribute("href", re.compile(r"^https?://"))
            page.screenshot(path=str(SHOTS / "lab-catalogue.png"))

            pool.stop()   # the pool goes away: the status bar says so, with the reason
            expect(item).to_have_text("GPU: pool down", timeout=30_000)
            assert "did not answer" in item.get_attribute("title")
        except Exception:
            print(lab.log())
            raise
        finally:
            lab.close()


def test_lab_without_a_pool_says_so(tmp_path, monkeypatch):
    env = _clean_env(monkeypatch)
    lab_browser.notebook(tmp_path / "plain.ipynb", ["print('no pool here')"])
    lab = lab_browser.LabServer(tmp_path, env)
    try:
        with _chromium() as browser:
            page = _open(browser, lab, "plain.ipynb")
            item = page.locator("[data-gpuwb=status-item]")
            expect(item).to_have_text("GPU: no pool", timeout=60_000)
            # the remote-GPU kernel still starts (on an embedded pool the server cannot see)
            assert page.wait_for_function(KERNEL_IDLE, timeout=120_000).json_value() \
                == "Python 3 (remote GPU)"
            item.click()
            reason = page.locator("#gpuwb-pool-panel [data-gpuwb=reason]")
            expect(reason).to_contain_text("no pool is configured")
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "lab-no-pool.png"))
    except Exception:
        print(lab.log())
        raise
    finally:
        lab.close()


#: The time a stale panel's figures are from: "as of 14:03:12 (…s ago)"
AS_OF = re.compile(r"as of \d\d:\d\d:\d\d \(")


def test_lab_on_a_shared_pool_near_quota_end_and_down(tmp_path, monkeypatch):
    env = _clean_env(monkeypatch)
    users = tmp_path / "users.toml"
    tokens = write_users(users, {"alice": {"weight": 2.0, "memory": 256 * MiB}, "bob": {}})
    (tmp_path / "alice-token").write_text(tokens["alice"])
    lab_browser.notebook(tmp_path / "forgotten.ipynb", ["import cupy as cp"])
    SHOTS.mkdir(parents=True, exist_ok=True)
    with ServedPool("fair", "cpu", users_file=users) as pool, _chromium() as browser:
        env.update(GPUWB_POOL=pool.tcp_address, GPUWB_TOKEN_FILE=str(tmp_path / "alice-token"))
        bob = kernelproxy.connect(pool.tcp_address, tokens["bob"], label="bob-train.py")
        lab = lab_browser.LabServer(tmp_path, env, ["--GpuWorkbench.poll_interval=0.5"])
        try:
            bcp = module_for(bob)
            z = bcp.ones((256, 256))
            for _ in range(20):   # some device time of bob's for the chart
                z = (z @ z) / 256.0
            assert float(z.sum()) > 0

            # no notebook open yet: alice has no session, and her weight is still hers
            page = _open(browser, lab, "")
            item = page.locator("[data-gpuwb=status-item]")
            expect(item).to_contain_text("GPU: NumPy", timeout=60_000)
            expect(item).to_have_attribute("title", re.compile(r"you: alice, weight 2\b"))
            page.close()
            page = _open(browser, lab, "forgotten.ipynb")   # her kernel opens her session
            item = page.locator("[data-gpuwb=status-item]")
            assert page.wait_for_function(KERNEL_IDLE, timeout=120_000).json_value() \
                == "Python 3 (remote GPU)"
            assert lab_browser.run_in_kernel(page, "import cupy as cp\n"
                                             "x = cp.ones((512, 512))\n"
                                             "for _ in range(20):\n    x = (x @ x) / 512.0\n"
                                             "float(x.sum())") == "ok"

            item.click()
            panel = page.locator("#gpuwb-pool-panel")
            users_table = panel.locator("[data-gpuwb=users]")
            expect(users_table.locator("tr[data-key=alice]")).to_contain_text("alice (you)")
            expect(users_table.locator("tr[data-key=alice] [data-gpuwb=weight]")).to_have_text("2")
            expect(users_table.locator("tr[data-key=bob] [data-gpuwb=weight]")).to_have_text("1")
            # her session, named by its notebook, with its idle time; bob's is not hers to see
            label = panel.locator("[data-gpuwb=sessions] [data-gpuwb=session-label]")
            expect(label).to_have_text("forgotten.ipynb", timeout=20_000)
            assert str(tmp_path / "forgotten.ipynb") in label.get_attribute("title")
            expect(panel.locator("[data-gpuwb=sessions] [data-gpuwb=idle]")).to_have_text(
                re.compile(r"^\d+(\.\d)? (s|min)$"))
            # the device over time: how busy (the pool's accounting) and its memory
            expect(panel.locator("[data-gpuwb=plot-load] polyline").first).to_be_attached(
                timeout=30_000)
            expect(panel.locator("[data-gpuwb=plot-memory] polyline").first).to_be_attached()
            expect(panel.locator("[data-gpuwb=nvml-note]")).to_contain_text("not a GPU")
            page.wait_for_function(OPS_ABOVE, arg=0, timeout=20_000)   # her ops are counted
            page.screenshot(path=str(SHOTS / "lab-shared-pool.png"))

            # 224 of her 256 MiB: the status item warns
            assert lab_browser.run_in_kernel(page, "big = cp.ones(224 * 2**20 // 8)") == "ok"
            expect(item).to_have_attribute("data-state", "warn", timeout=20_000)
            expect(item).to_have_text(re.compile(r"GPU: NumPy · share \d+% · 0\.2\d/0\.25 GiB "
                                                 r"\((8[5-9]|9\d)%\)"))
            expect(panel.locator("[data-gpuwb=memory-note]")).to_contain_text("near your memory quota")
            page.screenshot(path=str(SHOTS / "lab-near-quota.png"))
            # 64 MiB more: past it, an OutOfMemoryError, and the item says so
            assert lab_browser.run_in_kernel(page, "more = cp.ones(64 * 2**20 // 8)") \
                .startswith("error: OutOfMemoryError")
            expect(item).to_have_attribute("data-state", "oom", timeout=20_000)
            expect(item).to_contain_text("out of memory")
            expect(panel.locator("[data-gpuwb=memory-note]")).to_have_attribute("data-level", "oom")
            page.screenshot(path=str(SHOTS / "lab-out-of-memory.png"))

            # she ends the forgotten session from the panel: its memory is freed
            panel.locator("[data-gpuwb=end-session]").click()
            page.locator(".jp-Dialog button.jp-mod-warn").click()
            expect(panel.locator("[data-gpuwb=sessions]")).to_contain_text("no sessions of yours",
                                                                            timeout=20_000)
            expect(item).to_have_attribute("data-state", "ok", timeout=20_000)
            assert bob.id in {s["session"] for s in bob.status()["sessions"]}   # not bob's
            bob.close()
            # her kernel lives on and says the session has ended: either her next op fails
            # with SessionLostError and the cell after opens a new session, or (when the
            # kernel's heartbeat saw the end first) that cell opens one at once, with a note
            answer, note = lab_browser.run_in_kernel_noting(page, "float(cp.ones(3).sum())")
            if answer != "ok":
                assert answer.startswith("error: SessionLostError"), answer
                answer, note = lab_browser.run_in_kernel_noting(page, "float(cp.ones(3).sum())")
            assert answer == "ok"
            assert "the GPU session was lost; opened a new one" in note
            expect(label).to_have_text("forgotten.ipynb", timeout=20_000)

            pool.kill()   # the pool dies: its last figures stay, marked stale with their time
            expect(item).to_have_text("GPU: pool down", timeout=30_000)
            stale = panel.locator("[data-gpuwb=stale]")
            expect(stale).to_contain_text("the pool does not answer")
            expect(stale).to_have_text(AS_OF)
            expect(panel.locator("[data-gpuwb=sections].gpuwb-stale")).to_be_visible()
            expect(users_table.locator("tr[data-key=alice]")).to_be_visible()   # still shown
            expect(panel.locator("[data-gpuwb=end-session]")).to_be_disabled()
            assert re.search(r"last status from \d\d:\d\d:\d\d", item.get_attribute("title"))
            page.screenshot(path=str(SHOTS / "lab-pool-down-stale.png"))
        except Exception:
            print(lab.log())
            raise
        finally:
            lab.close()
            bob.close()
