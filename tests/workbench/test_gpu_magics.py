"""%gpu and %%gpu_time in a real IPython InteractiveShell, on a real pool (NumPy device)."""

from __future__ import annotations

import secrets
import subprocess
import sys
from types import SimpleNamespace

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import kernelproxy
from gpu_backend.pool import LocalPool
from workbench.connection import ClientSettings, workbench
from workbench.magics import COMMANDS, NOT_CONNECTED, info_view, memory_view, status_view
from workbench.views import GroupView, KeyValueView, TableView, human_bytes, human_duration, to_text
from tests.paths import PROJECT_ROOT
from tests.workbench.test_status_width import headers

ROOT = PROJECT_ROOT
GPU_TIME_CELL = "import cupy as cp; x = cp.ones((300,300)); float((x @ x).sum())"


@pytest.fixture(scope="module")
def env():
    workbench.disconnect()  # whatever an earlier module left
    # A token that begins with "-", as about one generated token in 64 does: argparse would
    # take it for an option (CI met one at random).
    pool = LocalPool(devices="cpu", lease_timeout=20.0, memory_limit=1 << 30,
                     token="-" + secrets.token_urlsafe(24)).start()
    shell = InteractiveShell.instance()
    shell.colors = "nocolor"
    try:
        shell.run_line_magic("load_ext", "workbench")
        before = workbench.session  # %load_ext connects nothing
        try:
            shell.run_line_magic("gpu", "status")
            unconnected = None
        except UsageError as exc:
            unconnected = str(exc)
        shell.run_line_magic("gpu", f"connect {pool.address} --token {pool.token}")
        yield SimpleNamespace(shell=shell, pool=pool, before=before, unconnected=unconnected)
    finally:
        workbench.disconnect()
        pool.stop()
        InteractiveShell.clear_instance()


def gpu(env, line: str = ""):
    return env.shell.run_line_magic("gpu", line)


def session() -> kernelproxy.Session:
    assert workbench.session is not None
    return workbench.session


def reconnect(env) -> None:
    if workbench.session is None:
        gpu(env, f"connect {env.pool.address} --token {env.pool.token}")


# -- loading ------------------------------------------------------------------------------

def test_load_ext_gives_gpu_and_catalog_and_connects_nothing(env):
    assert env.before is None
    assert env.unconnected == NOT_CONNECTED
    magics = env.shell.magics_manager.magics
    assert "gpu" in magics["line"] and "catalog" in magics["line"]
    assert "gpu_time" in magics["cell"]


def test_help_lists_every_subcommand(env, capsys):
    doc = env.shell.find_line_magic("gpu").__doc__
    for command in COMMANDS:
        assert f"%gpu {command}" in doc
    assert "%gpu connect ADDRESS [--token T | --token-file F]" in doc
    env.shell.run_cell("%gpu?")
    shown = capsys.readouterr().out
    assert "%gpu connect ADDRESS" in shown and "%gpu memory" in shown and "%%gpu_time" in shown


# -- the subcommands ----------------------------------------------------------------------

def test_connect_returned_a_session_summary(env, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(env.pool.token + "\n")
    old = session().id
    view = gpu(env, f"connect {env.pool.address} --token-file {token_file}")
    assert isinstance(view, KeyValueView)
    s = session()
    assert s.id != old and kernelproxy.installed()
    text, page = str(view), view._repr_html_()
    for shown in (s.id, env.pool.address, "NumPy (host CPU)", human_bytes(s.memory_limit)):
        assert shown in text and shown in page


def test_connect_asks_for_the_devices_the_session_holds(env):
    """``--devices N`` reaches the pool, which names its own limit (several devices are
    tests/kernelproxy/test_device_group.py's)."""
    with pytest.raises(UsageError, match="the pool has 1 device: a session cannot hold 2"):
        gpu(env, f"connect {env.pool.address} --token {env.pool.token} --devices 2")
    reconnect(env)
    assert session().group is None and kernelproxy.installed()


def test_a_lost_session_is_reopened_or_named(env, monkeypatch):
    label = lambda filename, line: f"line {line}"  # noqa: E731 (what the kernel sets)
    lost = session()
    lost.location_label = label
    lost.heartbeat.lost = "lease expired (simulated)"
    reconnects = workbench.reconnects
    view = gpu(env, "info")  # auto_reconnect (the default): a new session answers
    assert workbench.reconnects == reconnects + 1 and session() is not lost
    assert session().id in str(view) and session().location_label is label
    monkeypatch.setattr(workbench.settings, "auto_reconnect", False)
    session().heartbeat.lost = "lease expired (simulated)"
    try:
        with pytest.raises(UsageError, match="the session was lost"):
            gpu(env, "memory")
    finally:
        workbench.disconnect()
        reconnect(env)


def test_status(env):
    env.shell.run_cell("import cupy as cp; _queued = cp.ones(10) * 2")  # not sent yet
    view = gpu(env, "status")
    assert isinstance(view, GroupView)
    s = session()
    assert view.data["queued_ops"] + view.data["batches_in_flight"] >= 1
    text, page = str(view), view._repr_html_()
    for shown in ("NumPy (host CPU)", "cpu:0", f"{s.id} (you)", env.pool.address,
                  "batches in flight", "ops queued", human_bytes(s.memory_limit)):
        assert shown in text, shown
        assert shown in page, shown
    assert page.count('class="gpuwb-marked"') == 2   # your user's row and your session's
    users = view.data["users"]
    assert [u["user"] for u in users] == ["default"]  # single-token mode: one user
    assert users[0]["target_share"] == 1.0 and "default (you)" in text
    assert "policy share" in text and "one shared token" in text
    assert isinstance(gpu(env, ""), GroupView)  # the default command
    narrow = to_text(view, width=80)   # a terminal of 80 columns: headers whole, one line each
    assert max(map(len, narrow.splitlines())) <= 80 and len(headers(narrow)) == 3, narrow


def _row(text: str, key: str) -> str:
    (line,) = [line for line in text.splitlines() if key in line]
    return line


def test_status_says_its_timed_device_time_is_that_of_gpu_time_cells(env):
    """The row of device time the client timed names %%gpu_time cells, the only ones timed:
    "device time (timed) 0 s" beside the pool's measured figure said nothing of that."""
    # a session of its own, nothing timed on it yet (module_for would make it the active one)
    with kernelproxy.connect(env.pool.address, env.pool.token) as fresh:
        view = status_view(fresh)
        text = str(view)
        assert "(timed)" not in text, text
        assert "0 s (only %%gpu_time cells count)" in _row(
            text, "device time in %%gpu_time cells"), text
        assert "0 s (only %%gpu_time cells count)" in view._repr_html_()
        narrow = to_text(view, width=80)
        assert max(map(len, narrow.splitlines())) <= 80, narrow
    assert env.shell.run_cell("%%gpu_time\n" + GPU_TIME_CELL).success
    timed = session().device_seconds
    assert timed > 0
    text = str(gpu(env, "status"))
    assert human_duration(timed) in _row(text, "device time in %%gpu_time cells"), text
    assert "(timed)" not in text and "0 s (only %%gpu_time cells count)" not in text, text


def test_status_shows_stretch_replay(env):
    """A loop's body replayed as a held stretch shows in %gpu status: held, replays, and
    those not through graphs (the NumPy device's graphs are recorded calls)."""
    env.shell.run_cell("import cupy as cp\n_x = cp.arange(8.0)\n"
                       "_got = [float((_x * 2 + 1).sum()) for _ in range(16)]")
    figures = session().stretches.figures()
    # (held, or let go where its replays were timed no faster: both after replays)
    assert figures["held"] + figures["released"] >= 1 and figures["replays"] >= 1, figures
    text = str(gpu(env, "status"))
    assert (f"{figures['held']} stretch" in text and f"{figures['replays']:,} replays" in text
            and f"{figures['not_graphed']:,} not through graphs" in text), text
    assert ("let go" in text) == bool(figures["released"])


def test_info(env):
    view = gpu(env, "info")
    s = session()
    text, page = str(view), view._repr_html_()
    for shown in ("NumPy (host CPU)", "numpy", s.id, human_bytes(s.memory_limit)):
        assert shown in text and shown in page
    assert view.data["device"] == s.device


def test_sessions_marks_yours(env):
    other = kernelproxy.connect(env.pool.address, env.pool.token, user="someone-else")
    try:
        view = gpu(env, "sessions")
        assert isinstance(view, TableView)
        mine = session().id
        ids = [s["session"] for s in view.data["sessions"]]
        assert mine in ids and other.id in ids
        text, page = str(view), view._repr_html_()
        assert f"{mine} (you)" in text and f"{mine} (you)" in page
        assert f"{other.id} (you)" not in text and other.id in text
        assert "someone-else" in page   # the client's own label (every column in a page;
        # the text keeps to its width: the Client column goes first, `gpuwb status --wide`)
        labels = {r["session"]: r.get("label") for r in view.data["sessions"]}
        assert labels[mine] and labels[mine][-24:] in page   # what opened each session (its end)
        assert [r["user"] for r in view.data["sessions"]] == ["default", "default"]
        assert text.count("(you)") == 2  # the row and the caption
        assert page.count('class="gpuwb-marked"') == 1
    finally:
        other.close()


def test_share_plots_each_users_share_of_the_device(env):
    """Device time used now shows in the pool's history (whole seconds, from the worker's
    usage reports every ~0.5 s): a plot in notebooks, a table in text."""
    import time

    from workbench.pool_views import PlotView
    env.shell.run_cell("import cupy as cp; _s = cp.ones((400, 400))\n"
                       "for _ in range(20): _s = (_s @ _s) * 1e-3\nfloat(_s.sum())")
    deadline = time.monotonic() + 15
    while True:
        view = gpu(env, "share --minutes 1")
        if view.data["shares"].get("default") and any(view.data["shares"]["default"]):
            break
        assert time.monotonic() < deadline, "no device time reached the pool's history"
        time.sleep(0.5)
    assert isinstance(view, PlotView) and view.data["device"] == "cpu:0"
    assert max(view.data["shares"]["default"]) == pytest.approx(1.0)   # the only user
    text, page = str(view), view._repr_html_()
    assert "default (you)" in text and "100.0%" in text
    # the users' side beside it: the part of its work's time it waited for the device (a
    # fraction; alone, its grants' round trips and the suite's other sessions of this user
    # on a loaded machine: no bound on it here), each slice's and the whole window's
    assert 0 <= view.data["waited"]["default"] <= 1
    assert "(waited " in text and "over these minutes: default " in " ".join(text.split())
    assert '<img src="data:image/png;base64,' in page and view._repr_png_().startswith(b"\x89PNG")
    with pytest.raises(UsageError, match="between 0 and 10"):
        gpu(env, "share --minutes 20")


def test_memory(env):
    env.shell.run_cell("import cupy as cp; _m = cp.zeros((256, 256))")  # 512 KiB
    view = gpu(env, "memory")
    d = view.data
    assert d["memory_used"] >= 256 * 256 * 8 and d["arrays"] >= 1
    assert d["memory_limit"] == session().memory_limit == 1 << 30
    assert d["memory_free"] == d["memory_limit"] - d["memory_used"]
    text, page = str(view), view._repr_html_()
    for figure in (d["memory_used"], d["memory_limit"], d["memory_free"]):
        assert human_bytes(figure) in text and human_bytes(figure) in page
    assert view["free"] == human_bytes(d["memory_free"])
    assert "device total" not in text  # the NumPy device has no memory of its own to report
    env.shell.run_cell("del _m")


def test_memory_of_a_cupy_device_shows_the_device_too():
    device = {"kind": "cupy", "name": "NVIDIA H100 <80GB>", "memory_total": 80 << 30,
              "memory_free": 60 << 30}
    fake = SimpleNamespace(id="s1", memory_limit=8 << 30, device=device, memory_info=lambda: {
        "memory_used": 3 << 30, "memory_limit": 8 << 30, "arrays": 2, "ops": 9, "device": device})
    view = memory_view(fake)
    assert view["free"] == "5.0 GiB" and view["device total"] == "80.0 GiB"
    assert view.data["device_memory_free"] == 60 << 30
    assert "60.0 GiB" in str(view) and "NVIDIA H100 &lt;80GB&gt;" in view._repr_html_()


def test_info_of_a_cupy_device():
    device = {"kind": "cupy", "index": 0, "name": "NVIDIA H100 80GB HBM3",
              "compute_capability": "9.0", "multiprocessors": 132, "memory_total": 85 << 30,
              "memory_free": 84 << 30, "cupy": "14.2.0", "cuda_runtime": 12080,
              "stream_bytes": 4 << 20}
    fake = SimpleNamespace(id="s1", address="tcp://gpu:5555", memory_limit=8 << 30, device=device,
                           group=None)
    text = str(info_view(fake))
    for shown in ("NVIDIA H100 80GB HBM3", "compute capability", "9.0", "132", "85.0 GiB",
                  "CUDA runtime", "12.8", "CuPy", "14.2.0", "4.0 MiB", "tcp://gpu:5555"):
        assert shown in text, shown


def test_sync(env):
    env.shell.run_cell("import cupy as cp; _s = cp.arange(1000) ** 2")
    view = gpu(env, "sync")
    assert view.data["seconds"] >= 0 and "waited" in str(view)
    assert not session()._in_flight and not session()._ops


# -- %%gpu_time ---------------------------------------------------------------------------

def test_gpu_time(env):
    result = env.shell.run_cell("%%gpu_time\n" + GPU_TIME_CELL)
    assert result.success, result.error_in_exec
    view = result.result
    assert isinstance(view, KeyValueView)
    d = view.data
    assert d["device_seconds"] > 0
    assert d["wall_seconds"] >= d["device_seconds"]
    assert d["worker_seconds"] >= d["device_seconds"] and d["ops"] >= 2
    assert session().timing is False
    text = str(view)
    assert "wall" in text and human_duration(d["device_seconds"]) in text
    assert human_duration(d["wall_seconds"]) in view._repr_html_()
    assert env.shell.user_ns["x"].shape == (300, 300)  # the cell ran in the user's namespace


def test_gpu_time_error_propagates_once_and_timing_ends(env, capsys):
    capsys.readouterr()
    result = env.shell.run_cell("%%gpu_time\nimport cupy as cp\ny = cp.ones(3)\n1 / 0\n")
    assert isinstance(result.error_in_exec, ZeroDivisionError)
    assert session().timing is False
    assert capsys.readouterr().out.count("Traceback") == 1  # shown once, not twice
    # an asynchronous remote error surfaces at the magic's final sync, also as the cell's error
    result = env.shell.run_cell("%%gpu_time\nimport cupy as cp\nz = cp.ones(3) + cp.ones(4)\n")
    assert isinstance(result.error_in_exec, ValueError) and "broadcast" in str(result.error_in_exec)
    assert session().timing is False
    # a syntax error: nothing runs
    result = env.shell.run_cell("%%gpu_time\nnever_set = (1,\n")
    assert isinstance(result.error_in_exec, SyntaxError)
    assert "never_set" not in env.shell.user_ns
    # the session still works
    assert gpu(env, "memory").data["memory_limit"] == 1 << 30
    assert env.shell.run_cell("%%gpu_time\n" + GPU_TIME_CELL).success


def test_gpu_time_takes_no_arguments(env):
    with pytest.raises(UsageError, match="no arguments"):
        env.shell.run_cell_magic("gpu_time", "--fast", "pass")


# -- bad input ----------------------------------------------------------------------------

@pytest.mark.parametrize("line, message", [
    ("stauts", "unknown command 'stauts'; did you mean 'status'"),
    ("frobnicate", "unknown command 'frobnicate'"),
    ("connect", "missing ADDRESS"),
    ("connect localhost:5555 --token t", "tcp://host:port"),
    ("connect tcp://127.0.0.1:1 --token a --token-file b", "not allowed with"),
    ("connect tcp://127.0.0.1:1 --token-file /nonexistent/token", "cannot read the token file"),
    ("status extra", "unrecognized arguments"),
    ("connect 'tcp://unclosed", "cannot split"),
])
def test_bad_input_is_a_usage_error_and_keeps_the_session(env, line, message):
    before = session()
    with pytest.raises(UsageError, match=message):
        gpu(env, line)
    assert workbench.session is before and not before.closed


def test_connect_without_any_token(env, monkeypatch):
    monkeypatch.setattr(workbench, "settings", ClientSettings(token=None, token_file=None))
    before = session()
    with pytest.raises(UsageError, match="no token"):
        gpu(env, f"connect {env.pool.address}")
    assert workbench.session is before  # checked before the current session is closed


def test_wrong_token(env):
    try:
        with pytest.raises(UsageError, match="wrong or missing token.*previous session was closed"):
            gpu(env, f"connect {env.pool.address} --token not-the-token")
    finally:
        reconnect(env)


def test_disconnect_then_every_session_magic_is_a_usage_error(env):
    try:
        old = session().id
        view = gpu(env, "disconnect")
        assert f"{old} closed" in str(view) and old in view._repr_html_()
        assert workbench.session is None and not kernelproxy.installed()
        for command in ("status", "", "info", "sessions", "memory", "sync"):
            with pytest.raises(UsageError, match="^not connected: %gpu connect ADDRESS"):
                gpu(env, command)
        with pytest.raises(UsageError, match="^not connected"):
            env.shell.run_cell_magic("gpu_time", "", "pass")
        assert "none was open" in str(gpu(env, "disconnect"))
    finally:
        reconnect(env)
    assert isinstance(gpu(env, "status"), GroupView)


# -- the views ----------------------------------------------------------------------------

def test_human_figures():
    assert human_bytes(None) == "—" and human_bytes(0) == "0 B" and human_bytes(1023) == "1023 B"
    assert human_bytes(1536) == "1.5 KiB" and human_bytes(5 << 20) == "5.0 MiB"
    assert human_bytes(3 << 30) == "3.0 GiB" and human_bytes(80 << 30) == "80.0 GiB"
    assert human_bytes(700 << 20) == "700 MiB"
    assert human_duration(None) == "—" and human_duration(0) == "0 s"
    assert human_duration(2e-6) == "2.0 µs" and human_duration(0.25) == "250 ms"
    assert human_duration(1.5) == "1.5 s" and human_duration(75) == "1 min 15 s"
    assert human_duration(2 * 3600 + 60) == "2 h 1 min"


def test_views_escape_and_do_not_parse_markup():
    panel = KeyValueView("a<b>", [("k&", "<script>x</script>"), ("style", "[bold]x[/bold]")])
    page = panel._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page and "a&lt;b&gt;" in page
    assert "[bold]x[/bold]" in str(panel)
    table = TableView("T", ["A", "B"], [["1", None], ["<i>", "[red]r"]], marked={1})
    text, page = str(table), table._repr_html_()
    assert "—" in text and "[red]r" in text and "&lt;i&gt;" in page and "<i>" not in page.replace(
        "<i>none</i>", "")
    assert page.count("gpuwb-marked") == 1
    assert "(none)" in str(TableView("Empty", ["A"], []))
    assert table.__rich__() is not None and panel.__rich__() is not None


def test_views_and_magics_do_not_load_the_catalogue():
    """%gpu shares only the magics' parser with %catalog: the catalogue's models, data and
    queries are not loaded with it."""
    code = ("import sys, workbench.views, workbench.magics; "
            "loaded = {'catalog.models', 'catalog.data', 'catalog.queries', 'catalog.render'} "
            "& set(sys.modules); assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)


def test_a_server_key_that_begins_with_a_dash_is_read_as_the_key(env):
    """Z85's alphabet has "-": such a key is the option's value, not an unknown option."""
    try:
        with pytest.raises(UsageError) as raised:
            gpu(env, f"connect {env.pool.address} --token {env.pool.token} --server-key -{'a' * 39}")
        assert "expected one argument" not in str(raised.value)
        assert "does not use encryption, but a key is pinned" in str(raised.value)
    finally:
        reconnect(env)


def test_a_missing_token_value_is_named_not_taken_from_the_next_option(env):
    with pytest.raises(UsageError, match="argument --token: expected one argument"):
        gpu(env, f"connect {env.pool.address} --token --devices 1")
    assert workbench.session is not None   # refused while parsing: the session stays
