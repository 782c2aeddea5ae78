"""Pool settings: command line, ``GPUWB_*`` environment variables, or a TOML file.

Precedence (highest first): explicit arguments, environment, the file named by
``GPUWB_CONFIG``, defaults.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, TomlConfigSettingsSource

from .protocol.addresses import TCP_ADDRESS

__all__ = ["PoolSettings", "read_token", "arguments_env_then_toml"]


class PoolSettings(BaseSettings):
    """How a pool listens, which devices it serves and how it treats sessions."""

    model_config = SettingsConfigDict(env_prefix="GPUWB_", extra="forbid")

    listen: str = Field("tcp://127.0.0.1:5555", description="front-door address (tcp://host:port)")
    same_host: bool = Field(True, description="also serve clients on this host over ipc:// "
                            "(Unix-domain sockets), beside tcp://")
    devices: str = Field("auto", description="auto | cpu | comma list of GPU indices or 'cpu'")
    token: str | None = Field(None, description="shared secret; read from token_file if unset")
    token_file: Path | None = None
    key_file: Path | None = Field(None, description="the pool's CurveZMQ secret key file "
                                  "(gpuwb-backend keys); required off loopback")
    users_file: Path | None = Field(None, description="TOML users file; none: single-token mode")
    policy: Literal["fair", "share", "fifo", "none"] = Field(
        "share", description="how sessions share a device: weighted fair share by turns, "
                             "weighted fair share side by side (only a user ahead of its "
                             "share held back; the default), first come first served by "
                             "batch, or CUDA's own time-slicing")
    share_window_ms: float = Field(4.0, gt=0, le=1000, description="share policy: device "
                                   "milliseconds (weighted) a user with work may run ahead of "
                                   "the user furthest behind before it is held back")
    # (16 ms: after a read's tail was no longer charged twice, three passes on an H200 and an
    # H100 met 11 of issue 51's 21 scenario targets with it against 5 with every session at
    # 4 ms: docs/fair-share.md, runs 83-84)
    share_deep_lead_ms: float = Field(16.0, ge=0, le=100, description="share policy: device "
                                      "milliseconds of work the sessions of the heaviest users "
                                      "attached to a device may launch ahead (lighter users keep "
                                      "the workers' 4 ms; 0: everyone does)")
    # (4 ms: an interactive user, back every ~10 ms for a few small ops, is light; users that
    # sync are away for their round trips, under 2 ms: H200 runs 86-87, docs/fair-share.md)
    # (8 ms: users 1:2:4 with 8-16 ms batches split alike waited for or not in the policy's
    # simulation, the device idler waiting; arbiter/anticipation.py)
    share_anticipate_batch_ms: float = Field(8.0, ge=0, le=10000, description="share policy: "
                                             "a user whose batches average at most this many "
                                             "milliseconds and whose gaps at most 1 ms is waited "
                                             "for in its gaps (the users ahead of it stay held)")
    share_light_gap_ms: float = Field(4.0, ge=0, le=10000, description="share policy: a user "
                                      "whose gaps between batches average at least this many "
                                      "milliseconds is light: the first 2 ms of each of its "
                                      "batches hold nobody back (0: no user is)")
    # (1 ms: a loop's round trip on the GPU hosts measured, the trainer's ~0.7 ms among them;
    # dl-mix's long user 0.451-0.474 of its rate against 0.414-0.433 without, `none` 0.467-0.477,
    # H200 runs 219-220; a 2 ms bound gained nothing more: docs/fair-share.md)
    share_gap_charge_ms: float = Field(1.0, ge=0, le=1000, description="share policy: a user "
                                       "back from a gap between its batches of at most this many "
                                       "milliseconds (its loop's round trip) is charged the gap as "
                                       "its own time, as it would be alone (0: none is)")
    share_forget_idle_ms: float = Field(50.0, ge=0, le=3_600_000, description="share policy: "
                                        "a user back to a device nobody used for this many "
                                        "milliseconds starts every user level, what each had "
                                        "banked or owed forgotten (0: never)")
    # (1 s: an idle notebook's open session counted as company cost the 2048² GEMM user
    # beside it 0.04 of its rate under share, H200 run 336; docs/fair-share.md)
    company_idle_ms: float = Field(1000.0, ge=0, le=3_600_000, description="share policy: a "
                                   "session with no work whose worker has said nothing for "
                                   "this many milliseconds is no company to the others on its "
                                   "device, which then launch as alone (0: every session "
                                   "attached is company; else at least 50)")
    quantum_ms: float = Field(2.0, gt=0, le=100, description="fair policy: the least device "
                              "milliseconds a session keeps the device while others wait")
    period_ms: float = Field(20.0, ge=0, le=1000, description="fair policy: device milliseconds "
                             "in which every backlogged user gets one turn, its share of them "
                             "(0: every turn is quantum_ms)")
    usage_log: Path | None = Field(None, description="append-only usage log (JSON lines); none: kept "
                                                     "in memory only")
    memory_limit: int = Field(4 << 30, ge=1 << 20, description="bytes of device memory per session")
    lease_timeout: float = Field(60.0, gt=0, description="seconds without heartbeat before a session ends")
    spare_workers: int = Field(1, ge=0, le=8, description="warm workers kept ready per device")
    ready_timeout: float = Field(60.0, gt=0, le=3600, description="seconds a new worker may "
                                 "take to say it is ready (its device opened: a CUDA context, "
                                 "about 1.6 s on an idle H100) before it is ended, counted as a "
                                 "failed start, and replaced")
    swap_idle: float | None = Field(600.0, gt=0, description="seconds a session may be idle "
                                    "before its arrays are swapped out of device memory to the "
                                    "swap directory (they come back, bitwise, at its next op); "
                                    "none: never")
    park_idle: float | None = Field(1800.0, gt=0, description="seconds a swapped-out session "
                                    "may stay idle before it is parked: its worker writes what "
                                    "it still holds to the swap directory and exits, giving "
                                    "back its process and device context; the session's next "
                                    "op starts a worker that takes it back (docs/swap.md); "
                                    "none: never")
    rebalance_idle: float | None = Field(600.0, gt=0, description="seconds a session may "
                                         "stay idle before the pool may move it to an emptier "
                                         "device of its host (one holding two sessions fewer "
                                         "than its own; a lent move, device to device: "
                                         "docs/swap.md); none: never")
    swap_dir: Path | None = Field(None, description="this pool's own directory (no other "
                                  "pool's: a pool starting there deletes what dead workers "
                                  "left) where swapped sessions' files go, one "
                                  "0600 file each in a 0700 directory (none: a swap folder in "
                                  "each host's private run directory)")
    swap_dir_shared: bool = Field(False, description="the swap directory is one filesystem "
                                  "every host of the pool mounts at the same path (NFS, "
                                  "Lustre): sessions may then move between hosts through it "
                                  "(gpuwb-backend drain HOST); else moves stay on one host")
    swap_cap: int | None = Field(None, ge=0, description="bytes of swapped-out arrays each "
                                 "user may have (in host memory and the swap directory) over all their sessions "
                                 "(a session that would pass it stays on its device); none: "
                                 "no cap")
    swap_host_memory: int | None = Field(None, ge=0, description="bytes of host memory the "
                                         "swapped-out sessions of one host may hold there (the "
                                         "fast tier: a swap-out within it is a copy to host "
                                         "memory, beyond it to a file of the swap directory); "
                                         "none: a quarter of each host's memory (its cgroup's "
                                         "limit where lower); 0: files only")
    numpy_device_memory: int | None = Field(None, ge=1 << 20, description="the NumPy device's "
                                            "memory, bytes, shared by its sessions as a GPU's is "
                                            "(tests and demos of swapping under pressure); none: "
                                            "each session has only its own limit")
    numpy_device_turns: bool = Field(False, description="the NumPy device's sessions run "
                                     "their ops in turns, as a GPU's share its cores, instead "
                                     "of each on host cores of its own (tests and demos of how "
                                     "a policy splits a busy device)")
    worker_zygote: bool = Field(True, description="fork workers from a process with their "
                                "imports done (off: each starts as a new Python process)")
    max_sessions_per_device: int = Field(64, ge=1)
    worker_spin_ms: float = Field(20.0, ge=0, le=1000, description="a session's worker that "
                                  "holds a spin slot polls this long after each message, so that "
                                  "a sync after a pause finds it awake (0: only the short spin)")
    spin_slots: int | None = Field(None, ge=0, le=4096, description="how many workers may spin "
                                   "that long at once, each a core (none: half the host's cores "
                                   "less one)")
    metrics_port: int | None = Field(None, ge=0, le=65535, description="serve Prometheus "
                                     "metrics on this port (0: any free port); none: no metrics")
    preempt_patience_ms: float = Field(5.0, ge=0, le=1000, description="a diagnostic: fair "
                                       "policy, how long a preempting newcomer waits for the "
                                       "holder's launched work to drain")
    patience_by_op: bool = Field(True, description="a diagnostic: fair policy, the newcomer's "
                                 "wait follows the holder's reported op length (off: always "
                                 "preempt_patience_ms)")
    gap_rule: bool = Field(True, description="a diagnostic: fair policy, a user between two "
                           "batches may be kept the device while a user of longer ops waits "
                           "(off: the device goes to the next in line at once)")
    # (a long op beside users ahead of its user held them back till its report: on an H200
    # beside 16384² float32 GEMMs (~150 ms each) dl-mix's trainer got 0.37 of its rate alone
    # without it, 0.55 with it, none 0.50-0.53; run 330, docs/fair-share.md)
    share_assume_silent: bool = Field(True, description="share policy: a session on the device "
                                      "that has not reported for longer than the share window "
                                      "is assumed to use its part of it meanwhile, so that the "
                                      "users held back for it go as it passes them (off: they "
                                      "wait for its report, a long op's end)")
    # (paced beside an interactive user, a 2048² GEMM user ran 0.026-0.048 below none's
    # rate, unpaced 0.012 above to 0.003 below, H200 run 338; docs/fair-share.md)
    share_light_company: bool = Field(True, description="share policy: a session whose "
                                      "company on its device is only light users (away most "
                                      "of the time, short batches) launches its long replays "
                                      "whole through their graphs, as alone, instead of paced "
                                      "op by op (off: paced beside any company)")
    # (users 1:2:4 that all queue deep, paced: split error at one second 3.0-3.3 % mean,
    # 8.1-9.4 % p99; their backlogged replays unpaced 1.1-1.3 / 2.6-4.2 %, H200 runs 338-340)
    share_deep_company: bool = Field(True, description="share policy: a session that keeps "
                                     "its work backlogged, beside company that all does too, "
                                     "launches a long replay whose next message already waits "
                                     "whole through its graphs instead of paced op by op (off: "
                                     "paced beside any company that weighs)")
    share_fill: bool = Field(False, description="share policy: a user held back whose ops fit "
                             "an anticipated user's expected gap or the window runs what the gap "
                             "holds (off, the default: the device waits for that user; on H100 "
                             "runs 32-35 no GPU scenario let the fill in, docs/fair-share.md)")
    stacks: bool = Field(False, description="a diagnostic: the pool's processes write every "
                         "thread's stack to their standard error on SIGUSR2 (runtime/stacks.py)")
    arbiter_trace: Path | None = Field(None, description="a diagnostic: append every arbiter "
                                       "decision to this file as a JSON line")
    cluster: str | None = Field(None, description="a pool across hosts: the Ray cluster's "
                                "address (auto, or HOST:PORT of its head); none: this host's "
                                "devices only (docs/cluster.md)")
    cluster_devices: Literal["gpu", "numpy"] = Field(
        "gpu", description="a pool across hosts: each host serves its GPUs (gpu), or one NumPy "
                           "device per GPU it declares to Ray (numpy: tests and demos)")
    agent_address: str | None = Field(None, description="a pool across hosts, set on a GPU "
                                      "host: where clients reach this host's workers (default: "
                                      "its address in the Ray cluster)")
    metrics_address: str = Field("127.0.0.1", description="the metrics server's address "
                                 "(0.0.0.0 for a scraper on another host)")

    @field_validator("company_idle_ms")
    @classmethod
    def _company_idle_not_within_a_batch(cls, value: float) -> float:
        # (shorter, a session's every gap between its batches would flip the others between
        # alone and company, and each of its messages count its device's company again)
        if 0 < value < 50:
            raise ValueError("company_idle_ms is 0 (every session is company) or at least 50")
        return value

    @field_validator("listen")
    @classmethod
    def _tcp_only(cls, value: str) -> str:
        match = TCP_ADDRESS.fullmatch(value)
        if match is None or int(match[2]) > 65535 or not _valid_host(match[1]):
            hint = ""
            host, _, port = value.removeprefix("tcp://").rpartition(":")
            if value.startswith("tcp://") and ":" in host and "[" not in host \
                    and _valid_host(f"[{host}]") and port.isdigit():
                hint = f" (did you mean tcp://[{host}]:{port}?)"
            raise ValueError(f"listen must look like tcp://HOST:PORT, such as tcp://0.0.0.0:5555, "
                             f"or tcp://[::]:5555 for IPv6 (an IPv6 address in brackets); "
                             f"got {value!r}{hint}")
        return value

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings,
                                   dotenv_settings, file_secret_settings):
        return arguments_env_then_toml(settings_cls, init_settings, env_settings, "GPUWB_CONFIG")

    def resolved_token(self) -> str:
        """The token clients must present; generated (and kept) if none is configured."""
        if self.token:
            return self.token
        if self.token_file is not None:
            return read_token(self.token_file)
        self.token = secrets.token_urlsafe(24)
        return self.token

    def policy_options(self) -> dict:
        """The arbiter's policy settings, in seconds, by the names ``Arbiter`` and
        ``make_policy`` take them: hosts/worker_host.py makes each device's policy with
        them, and the tests make the pool's own ``share`` from them (a policy made alone
        has none of the pool's defaults: no deep lead, no light gap, nothing assumed)."""
        return {"quantum": self.quantum_ms / 1e3, "period": self.period_ms / 1e3,
                "window": self.share_window_ms / 1e3,
                "preempt_patience": self.preempt_patience_ms / 1e3,
                "patience_by_op": self.patience_by_op, "gap_rule": self.gap_rule,
                "fill": self.share_fill, "deep_lead": self.share_deep_lead_ms / 1e3,
                "light_gap": self.share_light_gap_ms / 1e3,
                "gap_charge": self.share_gap_charge_ms / 1e3,
                "forget_idle": self.share_forget_idle_ms / 1e3,
                "assume_silent": self.share_assume_silent,
                "anticipate_batch": self.share_anticipate_batch_ms / 1e3}

    def company_options(self) -> dict:
        """The arbiter's own settings beside its policies' (``Arbiter`` takes them; a
        policy does not): how long a silent session with no work stays company, and
        whether light company, or deep company, lets long replays go unpaced."""
        return {"company_idle": self.company_idle_ms / 1e3,
                "light_company": self.share_light_company,
                "deep_company": self.share_deep_company}

    @property
    def host(self) -> str:
        return self.listen.rsplit(":", 1)[0][len("tcp://"):]

    @property
    def port(self) -> int:
        return int(self.listen.rsplit(":", 1)[1])


def _valid_host(host: str) -> bool:
    """Whether *host* (of ``tcp://HOST:PORT``) is a name or IPv4 address, or an IPv6
    address in brackets that is one (``[::ffff:127.0.0.1]``, IPv4-mapped, among them)."""
    if not host.startswith("["):
        return True
    try:
        ipaddress.IPv6Address(host[1:-1])
    except ValueError:
        return False
    return True


def arguments_env_then_toml(settings_cls: type, init_settings: Any, env_settings: Any,
                            file_variable: str) -> tuple:
    """Settings sources in our order: arguments, then environment, then the TOML file
    named by the environment variable *file_variable* (when set)."""
    sources: list[Any] = [init_settings, env_settings]
    path = os.environ.get(file_variable)
    if path:
        sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
    return tuple(sources)


def read_token(path: str | os.PathLike) -> str:
    """Read a token file: its first non-empty line, stripped."""
    text = Path(path).read_text().strip()
    if not text:
        raise ValueError(f"token file {path} is empty")
    return text.splitlines()[0].strip()
