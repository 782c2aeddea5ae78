"""JupyterLab in a real browser (issue 10), on a shared pool: ``gpuwb-backend serve`` with a
users file (alice in Lab, of weight 2 and a 256 MiB memory quota, and bob from a script).
The panel shows both users and their weights (alice's before her first session too) and
the part of their time each waited for the other's turns, names alice's session by its
notebook with its idle time, warns near her quota and shows her out of memory, ends her
session from its End button, and, when the pool is killed, keeps its last figures marked
stale with the time they are from.

The other scenarios (one user on an embedded-style pool; no pool) are in
test_lab_browser.py, whose docstring says what these tests need; a file of its own so that
the test processes run the two files side by side.
"""

from __future__ import annotations

import re

import pytest

import kernelproxy
from gpu_backend.served import ServedPool
from kernelproxy.modules import module_for

from tests import lab_browser
from tests.gpu_backend.test_users_pool import MiB, write_users
from tests.lab_page import KERNEL_IDLE, OPS_ABOVE, SHOTS, chromium, clean_env, expect, open_page

#: Generous: on a clean CI machine the first test may install chromium (apt-get, minutes).
pytestmark = pytest.mark.timeout(1200)


#: The time a stale panel's figures are from: "as of 14:03:12 (…s ago)"
AS_OF = re.compile(r"as of \d\d:\d\d:\d\d \(")


def test_lab_on_a_shared_pool_near_quota_end_and_down(tmp_path, monkeypatch):
    env = clean_env(monkeypatch)
    users = tmp_path / "users.toml"
    tokens = write_users(users, {"alice": {"weight": 2.0, "memory": 256 * MiB}, "bob": {}})
    (tmp_path / "alice-token").write_text(tokens["alice"])
    lab_browser.notebook(tmp_path / "forgotten.ipynb", ["import cupy as cp"])
    SHOTS.mkdir(parents=True, exist_ok=True)
    with ServedPool("fair", "cpu", users_file=users) as pool, chromium() as browser:
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
            page = open_page(browser, lab, "")
            item = page.locator("[data-gpuwb=status-item]")
            expect(item).to_contain_text("GPU: NumPy", timeout=60_000)
            expect(item).to_have_attribute("title", re.compile(r"you: alice, weight 2\b"))
            page.close()
            page = open_page(browser, lab, "forgotten.ipynb")   # her kernel opens her session
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
            # each user's share from the users' side (issue 51): the part of their work's time
            # in the pool it waited for the other's turns ("–": no work of theirs lately)
            for name in ("alice", "bob"):
                waited = users_table.locator(f"tr[data-key={name}] [data-gpuwb=waited]")
                expect(waited).to_have_text(re.compile(r"^waited (\d+%|–)$"))
                assert "waited for other users' turns" in waited.get_attribute("title")
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
