"""Views of a pool's status: devices, users and their shares, sessions, share history.

Built from the ``status`` reply of the front door (``Session.status()`` or
``kernelproxy.connection.door_request``), so ``%gpu status``, ``%gpu share``
and ``gpuwb status`` in a shell show the same tables. The row of the asking
user (``status["you"]``) and of the asking session are marked.
"""

from __future__ import annotations

import base64
import html
import io
import time

from .views import DASH, GroupView, KeyValueView, TableView, View, human_bytes, human_duration

__all__ = ["device_name", "percent", "devices_view", "hosts_view", "users_view", "sessions_view",
           "pool_view", "status_group", "share_view", "PlotView"]


def device_name(info: dict) -> str:
    return str(info.get("name") or info.get("kind") or "?")


def percent(part: float | None, whole: float | None) -> str:
    return f"{100 * part / whole:.1f}%" if part is not None and whole else "—"


def _of(used: str, total: str | None) -> str:
    """``1.2 GiB of 16.0 GiB``, or the used figure alone where the total is unknown."""
    return used if total in (None, DASH) else f"{used} of {total}"


def devices_view(status: dict) -> TableView:
    """The pool's devices. Where all seven columns do not fit (80 columns, a pipe), used and
    total memory share one column and the percentage goes (views.py picks the form that
    fits: a console as wide as the wide form gets every column, `gpuwb status --wide`)."""
    rows, narrow = [], []
    for d in status.get("devices", []):
        info = d.get("info") or {}
        total = info.get("memory_total")
        used = human_bytes(d.get("memory_used"))
        shown_total = human_bytes(total) if total is not None else DASH
        rows.append([d.get("device"), device_name(info), d.get("sessions"), used, shown_total,
                     percent(d.get("memory_used"), total), d.get("spares_ready")])
        narrow.append([d.get("device"), device_name(info), d.get("sessions"),
                       _of(used, shown_total), d.get("spares_ready")])
    return TableView("Devices", ["Device", "Name", "Sessions", "Memory used", "Memory total",
                                 "Used", "Spare workers"], rows,
                     numeric={"Sessions", "Memory used", "Memory total", "Used", "Spare workers"},
                     no_wrap={"Device"}, empty="no devices",
                     narrow=TableView(
                         "Devices", ["Device", "Name", "Sessions", "Memory", "Spares"], narrow,
                         numeric={"Sessions", "Spares"}, no_wrap={"Device"}, empty="no devices"))


def hosts_view(status: dict) -> TableView:
    """The GPU hosts of a pool across hosts (docs/cluster.md): their devices, sessions, and
    how lately each host's agent reported."""
    rows = [[h.get("host"), h.get("address"), len(h.get("devices") or []), h.get("sessions"),
             human_duration(h.get("joined")), f"{h.get('heard') or 0:.1f} s"]
            for h in status.get("hosts") or []]
    return TableView("Hosts", ["Host", "Address", "Devices", "Sessions", "Joined", "Heard"], rows,
                     numeric={"Devices", "Sessions"}, no_wrap={"Host"},
                     empty="no host has joined yet")


def users_view(status: dict) -> TableView:
    """Per user and device: weight, target share, share measured over the last 10 s, and
    the users' side of it: how much of the time its work spent in the pool it waited for
    others' turns ("Waited"; — where it ran no batch then). Where all columns do not fit,
    the shares' headers are shorter and the sessions and queue go; the form is picked
    where it is drawn."""
    you = status.get("you")
    rows, narrow, marked = [], [], []
    for i, u in enumerate(status.get("users", [])):
        if u.get("user") == you:
            marked.append(i)
        quota = u.get("memory_quota")
        memory = _of(human_bytes(u.get("memory_used")), human_bytes(quota) if quota else None)
        queued = ("holds the device" if u.get("holding") else "") + (
            f"{', ' if u.get('holding') else ''}{u['waiting']} waiting" if u.get("waiting") else "")
        name = f"{u.get('user')} (you)" if u.get("user") == you else u.get("user")
        weight, target = f"{u.get('weight', 1):g}", percent(u.get("target_share"), 1)
        share = percent(u.get("share"), 1)
        waited = percent(u["waited"], 0) if u.get("waited") is not None else "—"
        rows.append([name, u.get("device"), weight, target, share, waited, u.get("sessions"),
                     queued or "—", memory])
        narrow.append([name, u.get("device"), weight, target, share, memory])
    policy = status.get("policy", "?")
    caption = {"fair": "policy fair: each device is shared by weight among the users with work",
               "fifo": "policy fifo: batches in the order they came; weights are not used",
               "share": "policy share: sessions run side by side; a user ahead of its weight's "
                        "share by more than a window waits",
               "none": "policy none: CUDA's time-slicing decides; targets are what fair would give"
               }.get(policy, f"policy {policy}") + (
        "; Waited: of the time a user's work spent in the pool (10 s), the part it waited "
        "for other users' turns")
    return TableView("Users", ["User", "Device", "Weight", "Target share", "Share (10 s)",
                               "Waited", "Sessions", "Queued", "Memory"], rows, marked=marked,
                     numeric={"Weight", "Target share", "Share (10 s)", "Waited", "Sessions"},
                     no_wrap={"User", "Device"}, caption=caption, empty="no users with sessions",
                     data={"users": status.get("users", []), "you": you, "policy": policy},
                     narrow=TableView(
                         "Users", ["User", "Device", "Weight", "Target", "Share", "Memory"],
                         narrow, marked=marked, numeric={"Weight", "Target", "Share"},
                         no_wrap={"User", "Device"}, empty="no users with sessions",
                         caption=caption + "; Share is over the last 10 s"))


def _swapped_where(swapped: int, in_host: int | None) -> str:
    """Where a swapped session's bytes are: "N swapped out (in host memory)", "(on disk)",
    or both when the host's budget took only part of them."""
    in_host = min(in_host or 0, swapped)
    if in_host == swapped:
        where = "in host memory"
    elif not in_host:
        where = "on disk"
    else:
        where = f"{human_bytes(in_host)} in host memory, {human_bytes(swapped - in_host)} on disk"
    return f"{human_bytes(swapped)} swapped out ({where})"


def sessions_view(status: dict, mine: str | list[str] | None = None) -> TableView:
    """The pool's sessions; *mine* (a session id, or the ids of a client's devices) marked.
    Where all columns do not fit, the client's name, the ops and the device time go."""
    rows, narrow, marked = [], [], []
    swapped = parked = 0
    ids = {mine} if isinstance(mine, str) else set(mine or ())
    sessions = status.get("sessions", [])
    for i, s in enumerate(sessions):
        if s.get("session") in ids:
            marked.append(i)
        sid = f"{s.get('session')} (you)" if s.get("session") in ids else s.get("session")
        memory = f"{human_bytes(s.get('memory_used'))} of {human_bytes(s.get('memory_limit'))}"
        if s.get("swapped"):   # its arrays wait in host memory or the swap directory (issue 52)
            memory += f", {_swapped_where(s.get('swapped'), s.get('swapped_host'))}"
            swapped += 1
        if s.get("parked"):    # ... and its worker has gone (docs/swap.md, "Moves")
            memory += ", parked"
            parked += 1
        idle = human_duration(s.get("idle"))
        rows.append([sid, s.get("user"), _opened_by(s.get("label")), s.get("client") or "—",
                     s.get("device"), memory, s.get("ops"), human_duration(s.get("device_seconds")),
                     idle])
        narrow.append([sid, s.get("user"), s.get("device"), memory, idle])
    n = len(sessions)
    title = f"Sessions on {status.get('address', '?')}"
    caption = f"{n} session{'s' if n != 1 else ''}" + ("; (you) marks this one" if mine else "")
    if swapped:
        caption += ("; swapped out: idle, its arrays wait in the pool host's memory or on its "
                    "disk and come back at its next op (from memory, in a fraction of the time)")
    if parked:
        caption += ("; parked: idle so long its worker gave its process and device context "
                    "back too; its next op starts another (a second or two)")
    return TableView(title, ["Session", "User", "Opened by", "Client", "Device", "Memory",
                             "Ops", "Device time", "Idle"], rows, marked=marked,
                     numeric={"Memory", "Ops", "Device time", "Idle"},
                     no_wrap={"Session", "User", "Client", "Device"},
                     caption=caption, empty="no sessions", data={"sessions": sessions, "mine": mine},
                     narrow=TableView(
                         title, ["Session", "User", "Device", "Memory", "Idle"], narrow,
                         marked=marked, numeric={"Idle"}, no_wrap={"Session", "User", "Device"},
                         caption=caption, empty="no sessions"))


def _opened_by(label: str | None, keep: int = 32) -> str:
    """What opened a session (a notebook's path, a script), its end kept: the name tells
    a forgotten notebook from the one in use (the pool shows it to its user only)."""
    if not label:
        return DASH
    return label if len(label) <= keep else "…" + label[-(keep - 1):]


def pool_view(status: dict, *, runs_in: str | None = None) -> KeyValueView:
    rows = [("address", status.get("address"))]
    if status.get("local_address"):
        rows.append(("on its host", status["local_address"]))
    rows += [("policy", status.get("policy", "?")),
            ("users", "from a users file" if status.get("users_mode") == "file"
             else "one shared token")]
    if runs_in is not None:   # where the pool runs, as the client knows it
        rows.append(("runs in", runs_in))
    if status.get("hosts") is not None:
        rows.append(("hosts", len(status["hosts"])))
    rows += [("devices", len(status.get("devices", []))),
             ("sessions", len(status.get("sessions", []))),
             ("lease timeout", human_duration(status.get("lease_timeout"))),
             ("uptime", human_duration(status.get("uptime")))]
    if status.get("you"):
        rows.append(("you are", status["you"]))
    return KeyValueView("Pool", rows)


def status_group(status: dict, *, mine: str | list[str] | None = None, runs_in: str | None = None,
                 extra: list[View] = ()) -> GroupView:
    """Everything ``gpuwb status`` prints, and the pool part of ``%gpu status``. Its tables
    fit 80 columns (a narrow form where all columns would not)."""
    hosts = [hosts_view(status)] if status.get("hosts") is not None else []
    return GroupView("GPU pool status", [pool_view(status, runs_in=runs_in), *hosts,
                                         devices_view(status), users_view(status),
                                         sessions_view(status, mine), *extra],
                     data=status)


# -- %gpu share ------------------------------------------------------------------------

class PlotView(View):
    """A PNG plot in notebooks (inline in the HTML), its table in terminals and text."""

    def __init__(self, title: str, png: bytes | None, table: TableView, *, data: dict) -> None:
        self.title, self.png, self.table, self.data = title, png, table, data

    def _renderable(self):
        return self.table._renderable()

    def _html(self) -> str:
        if self.png is None:
            return self.table._html()
        src = "data:image/png;base64," + base64.b64encode(self.png).decode()
        return (f"<b>{html.escape(self.title)}</b><br><img src=\"{src}\" alt=\"{html.escape(self.title)}\">"
                f"<details><summary>table</summary>{self.table._html()}</details>")

    def _repr_png_(self) -> bytes | None:
        return self.png


def _slice_sums(series: list[float], per: int, slices: int) -> list[float]:
    """*series* summed over each run of *per* entries (*slices* of them)."""
    return [sum(series[i * per:(i + 1) * per]) for i in range(slices)]


def _shares(history: dict, bucket: int) -> tuple[list[float], dict[str, list[float]]]:
    """Per user, the share of each *bucket*-second slice of the device time used then."""
    users = history.get("users") or {}
    step = history.get("step", 1.0)
    n = max((len(v) for v in users.values()), default=0)
    per = max(1, int(round(bucket / step)))
    slices = -(-n // per) if n else 0
    sums = {u: _slice_sums(v, per, slices) for u, v in users.items()}
    totals = [sum(col) for col in zip(*sums.values())] if sums else []
    shares = {u: [x / t if t else 0.0 for x, t in zip(v, totals)] for u, v in sums.items()}
    starts = [history.get("t0", 0) + i * per * step for i in range(slices)]
    return starts, shares


def _waited(history: dict, bucket: int) -> dict[str, list[float | None]]:
    """Per user, the part of each *bucket*-second slice's time its batches spent in the pool
    that they waited for other users' turns (None: no batch then); a pool that sends no
    such series gives none."""
    waited, worked = history.get("waited") or {}, history.get("worked") or {}
    per = max(1, int(round(bucket / history.get("step", 1.0))))
    out: dict[str, list[float | None]] = {}
    for user, series in worked.items():
        slices = -(-len(series) // per)
        totals = _slice_sums(series, per, slices)
        waits = _slice_sums(waited.get(user) or [], per, slices)
        out[user] = [min(1.0, w / t) if t > 0 else None for w, t in zip(waits, totals)]
    return out


def _whole(history: dict, user: str) -> float | None:
    """*user*'s waited part over the whole history (None: no batch in it)."""
    total = sum((history.get("worked") or {}).get(user) or [])
    return min(1.0, sum((history.get("waited") or {}).get(user) or []) / total) if total > 0 else None


def share_view(status: dict, minutes: float, device: str | None = None) -> PlotView:
    """Per-user shares of the device time over the last *minutes* (from the pool's history),
    each beside the users' side of it: how much of the time the user's work spent in the
    pool it waited for other users' turns ("waited")."""
    histories = status.get("history") or {}
    if device is None and histories:
        device = next(iter(histories))
    history = histories.get(device) or {"users": {}, "step": 1.0, "t0": time.time()}
    bucket = 10 if minutes > 2 else 5
    starts, shares = _shares(history, bucket)
    waited = _waited(history, bucket)
    you = status.get("you")
    users = sorted(shares)

    def cell(u: str, i: int) -> str:
        w = (waited.get(u) or [])[i] if i < len(waited.get(u) or []) else None
        return percent(shares[u][i], 1) + (f" (waited {percent(w, 0)})" if w is not None else "")

    rows = []
    for i, t in enumerate(starts):
        if not any(shares[u][i] for u in users):
            continue
        rows.append([time.strftime("%H:%M:%S", time.localtime(t)), *(cell(u, i) for u in users)])
    whole = {u: _whole(history, u) for u in users}
    said = [f"{u} {percent(w, 0)}" for u, w in whole.items() if w is not None]
    table = TableView(f"Shares of {device or 'the device'} over the last {minutes:g} min "
                      f"({bucket} s slices)", ["From", *(f"{u} (you)" if u == you else u for u in users)],
                      rows, numeric=set(users) | {f"{you} (you)"}, empty="no device time used",
                      caption=("waited: of the time a user's work spent in the pool, the part "
                               "it waited for other users' turns; over these minutes: "
                               + ", ".join(said)) if said else None,
                      data={"starts": starts, "shares": shares, "waited": waited})
    png = _plot(starts, shares, you, table.title) if rows else None
    return PlotView(table.title, png, table, data={"device": device, "starts": starts,
                                                   "shares": shares, "waited": whole, "you": you})


def _plot(starts: list[float], shares: dict[str, list[float]], you: str | None,
          title: str) -> bytes | None:
    try:
        import matplotlib
        matplotlib.use("Agg", force=False)
        from matplotlib.figure import Figure
    except ImportError:   # matplotlib missing: the table stands alone
        return None
    fig = Figure(figsize=(7.5, 2.6), dpi=100)
    ax = fig.add_subplot()
    x = [t - starts[-1] for t in starts]
    users = sorted(shares)
    ax.stackplot(x, *[shares[u] for u in users],
                 labels=[f"{u} (you)" if u == you else u for u in users], alpha=0.85)
    ax.set_ylim(0, 1)
    ax.set_xlabel("seconds ago")
    ax.set_ylabel("share of device time")
    ax.set_title(title, fontsize=9)
    ax.legend(loc="upper left", fontsize=8, ncol=min(4, len(users)))
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png")
    return out.getvalue()

