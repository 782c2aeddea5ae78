"""JupyterLab in a real browser (issue 10): a JupyterLab started here, Debian's chromium
driven by Playwright, a notebook on the "Python 3 (remote GPU)" kernel running CuPy
cells on a real pool (the NumPy device), and the Lab extension's status-bar item, side
panel (with the users' "waited" figure and a swapped-out session's line) and catalogue
checked as a user sees them. Screenshots are saved (GPUWB_SCREENSHOTS,
default build/browser-test/).

Three scenarios: one user on an embedded-style pool (in-process) and no pool, here; a
shared pool (``gpuwb-backend serve`` with a users file, several users on the panel) in
test_lab_browser_shared_pool.py, a file of its own so that the test processes run the two
files side by side.

Chromium missing and not installable, or the Lab extension not built: the test fails
with the reason; it does not skip.
"""

from __future__ import annotations

import re

import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for

from tests import lab_browser
from tests.lab_page import (KERNEL_IDLE, OPS_ABOVE, RUN_ALL, SHOTS, chromium, clean_env, expect,
                            open_page, ops)

#: Generous: on a clean CI machine the first test may install chromium (apt-get, minutes).
pytestmark = pytest.mark.timeout(1200)

CELLS = [
    "import cupy as cp\nx = cp.ones((256, 256))\nprint('device', cp.cuda.Device().id)",
    # 128 MiB held by the session, and some seconds of device time for the chart
    "y = cp.ones((4096, 4096))\nz = cp.ones((512, 512))\n"
    "for _ in range(60):\n    z = (z @ z) / 512.0\nprint('sum', float(z.sum()), y.nbytes)",
]


def test_lab_shows_the_pool_and_its_numbers_move(tmp_path, monkeypatch):
    env = clean_env(monkeypatch)
    with LocalPool(devices="cpu") as pool, chromium() as browser:
        token_file = tmp_path / "token"
        token_file.write_text(pool.token)
        env.update(GPUWB_POOL=pool.address, GPUWB_TOKEN_FILE=str(token_file))
        lab_browser.notebook(tmp_path / "gpu.ipynb", CELLS)
        lab = lab_browser.LabServer(tmp_path, env, ["--GpuWorkbench.poll_interval=0.5"])
        try:
            page = open_page(browser, lab, "gpu.ipynb")
            item = page.locator("[data-gpuwb=status-item]")
            expect(item).to_contain_text("GPU: NumPy", timeout=60_000)
            assert page.wait_for_function(KERNEL_IDLE, timeout=120_000).json_value() \
                == "Python 3 (remote GPU)"
            item.click()   # opens the side panel
            panel = page.locator("#gpuwb-pool-panel")
            expect(panel).to_be_visible()
            expect(panel.locator("[data-gpuwb=devices]")).to_contain_text("NumPy (host CPU)")
            before_text, before_ops = item.inner_text(), ops(page)

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
            first_ops = ops(page)
            you = panel.locator("[data-gpuwb=users] tr.gpuwb-you")
            expect(you).to_contain_text("default (you)")
            # beside the share, the users' side of it: the part of your work's time in the
            # pool it waited for others' turns (alone here: 0%, or – with no work lately)
            waited = you.locator("[data-gpuwb=waited]")
            expect(waited).to_have_text(re.compile(r"^waited (\d+%|–)$"))
            assert "waited for other users' turns" in waited.get_attribute("title")
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

            # issue 52: a session of yours swapped out, how much and where. Sessions opened
            # from now on swap out when idle (the kernel's was opened with the default, 600
            # s); a host budget of 3 MiB takes the first of its two 2 MiB arrays, the swap
            # file the second (tests/gpu_backend/test_swap_host_tier.py)
            pool.door.settings.swap_idle = 0.3
            pool.door.settings.swap_host_memory = 3 << 20
            script = kernelproxy.connect(pool.address, pool.token, label="idle-script.py")
            scp = module_for(script)
            held = [scp.ones(1 << 18), scp.ones(1 << 18)]   # 2 MiB each
            assert float(held[0][:1].get()[0]) == 1.0
            swapped = panel.locator("[data-gpuwb=sessions] [data-gpuwb=swapped]")
            expect(swapped).to_have_text(
                "4.0 MiB swapped out (2.0 MiB in host memory, 2.0 MiB on disk)", timeout=30_000)
            assert "come back at its next op" in swapped.get_attribute("title")
            expect(panel.locator("[data-gpuwb=sessions] tr.gpuwb-noted")).to_contain_text(
                "idle-script.py")   # the line is beneath its session's row
            page.screenshot(path=str(SHOTS / "lab-swapped.png"))
            # ... and parked once idle long enough: its worker gone, all of it on disk
            pool.door.settings.park_idle = 0.5
            expect(swapped).to_have_text("4.0 MiB swapped out (on disk), parked", timeout=30_000)
            assert "its worker gave its process and device context back" in \
                swapped.get_attribute("title")
            pool.door.settings.park_idle = None
            assert float(held[1].sum()) == float(1 << 18)   # its next op: back, bitwise
            script.close()

            pool.stop()   # the pool goes away: the status bar says so, with the reason
            expect(item).to_have_text("GPU: pool down", timeout=30_000)
            assert "did not answer" in item.get_attribute("title")
        except Exception:
            print(lab.log())
            raise
        finally:
            lab.close()


def test_lab_without_a_pool_says_so(tmp_path, monkeypatch):
    env = clean_env(monkeypatch)
    lab_browser.notebook(tmp_path / "plain.ipynb", ["print('no pool here')"])
    lab = lab_browser.LabServer(tmp_path, env)
    try:
        with chromium() as browser:
            page = open_page(browser, lab, "plain.ipynb")
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
