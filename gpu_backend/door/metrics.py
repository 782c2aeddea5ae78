"""Prometheus metrics of a pool (``gpuwb-backend serve --metrics-port N``).

The figures are the pool's own status (devices, users and their shares, sessions) and
its accounting (each user's device time, ops and bytes since the pool started), as the
front door's loop publishes them once a second (:meth:`FrontDoor.metrics_snapshot`):
a scrape runs in the metrics server's thread and reads that snapshot only, never the
loop's live tables. Counters (``*_total``) come from the accounting, which never goes
backwards; gauges are the status of the moment of the snapshot, and each device's last
sample (``device_samples``: how busy it was by the pool's accounting, and on a GPU with
NVML its utilisation and memory in use), what jupyterlab-nvdashboard's users plot.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

__all__ = ["PoolCollector", "serve_metrics"]

#: (metric, help, the status field) of each user row's gauges
_USER_GAUGES = (
    ("gpuwb_user_weight", "the user's weight on the device", "weight"),
    ("gpuwb_user_target_share", "the user's share of the device by weight, among users with work",
     "target_share"),
    ("gpuwb_user_share", "the user's measured share of the device over the last 10 s", "share"),
    ("gpuwb_user_queued", "the user's sessions waiting for the device", "waiting"),
    ("gpuwb_user_sessions", "the user's open sessions on the device", "sessions"),
    ("gpuwb_user_memory_used_bytes", "device memory of the user's sessions", "memory_used"),
    ("gpuwb_user_memory_quota_bytes", "the user's device-memory quota", "memory_quota"),
)
#: (metric, help, the sample's field) of each device's last sample (device_samples.latest)
_DEVICE_SAMPLES = (
    ("gpuwb_device_busy_ratio", "the part of the last sample interval (2 s) the device ran "
     "sessions' work, by the pool's accounting (device time its workers measured)", "busy"),
    ("gpuwb_device_utilization_ratio", "NVML's GPU utilisation at the last sample, 0 to 1 "
     "(GPUs where NVML is read)", "utilization"),
    ("gpuwb_device_nvml_memory_used_bytes", "device memory in use as NVML reports it, every "
     "process's (GPUs where NVML is read)", "nvml_memory"),
)
#: (metric, help, the accounting field) of each user's counters
_USER_COUNTERS = (
    ("gpuwb_user_device_seconds", "device time of the user's sessions since the pool started",
     "device_s"),
    ("gpuwb_user_ops", "ops run for the user since the pool started", "ops"),
    ("gpuwb_user_bytes_in", "bytes uploaded by the user since the pool started", "bytes_in"),
    ("gpuwb_user_bytes_out", "bytes downloaded by the user since the pool started", "bytes_out"),
    ("gpuwb_user_sessions_opened", "sessions the user opened since the pool started", "sessions"),
    ("gpuwb_user_op_errors", "ops of the user that raised since the pool started", "errors"),
    # the users' side of sharing: waited over worked is the part of its work's time in the
    # pool that the user waited for others' turns
    ("gpuwb_user_waited_seconds", "wall time the user's batches waited for the device while "
     "others held it, since the pool started", "waited_s"),
    ("gpuwb_user_worked_seconds", "wall time the user's batches spent in their workers, waits "
     "included, since the pool started", "worked_s"),
)


class PoolCollector:
    """Reads the pool's latest published snapshot at each scrape."""

    def __init__(self, snapshot: Any) -> None:
        self._snapshot = snapshot   # a callable: the door's latest snapshot, or None

    def collect(self):
        snap = self._snapshot()
        if snap is None:   # the loop has not published yet
            return
        status, totals = snap["status"], snap["totals"]
        up = GaugeMetricFamily("gpuwb_pool_up", "1 while the pool serves", value=1)
        yield up
        sessions = GaugeMetricFamily("gpuwb_device_sessions", "open sessions per device", labels=["device"])
        used = GaugeMetricFamily("gpuwb_device_memory_used_bytes", "device memory of the sessions",
                                 labels=["device"])
        total = GaugeMetricFamily("gpuwb_device_memory_total_bytes", "the device's memory",
                                  labels=["device"])
        samples = snap.get("samples") or {}
        for device in status.get("devices", []):
            name = device["device"]
            sessions.add_metric([name], device.get("sessions") or 0)
            used.add_metric([name], device.get("memory_used") or 0)
            size = (device.get("info") or {}).get("memory_total")
            size = size if size is not None else (samples.get(name) or {}).get("memory_total")
            if size is not None:
                total.add_metric([name], size)
        yield from (sessions, used, total)
        if status.get("hosts") is not None:   # a pool across hosts (docs/cluster.md)
            hosts = GaugeMetricFamily("gpuwb_hosts", "GPU hosts in the pool", value=len(status["hosts"]))
            yield hosts
            host_sessions = GaugeMetricFamily("gpuwb_host_sessions", "open sessions per host",
                                              labels=["host"])
            heard = GaugeMetricFamily("gpuwb_host_heard_seconds", "seconds since the host's "
                                      "agent last reported", labels=["host"])
            for row in status["hosts"]:
                host_sessions.add_metric([row["host"]], row["sessions"])
                heard.add_metric([row["host"]], row["heard"])
            yield from (host_sessions, heard)
        for metric, text, field in _DEVICE_SAMPLES:
            family = GaugeMetricFamily(metric, text, labels=["device"])
            for name, sample in sorted(samples.items()):
                if sample.get(field) is not None:
                    family.add_metric([name], float(sample[field]))
            yield family
        for metric, text, field in _USER_GAUGES:
            family = GaugeMetricFamily(metric, text, labels=["user", "device"])
            for row in status.get("users", []):
                if row.get(field) is not None:
                    family.add_metric([row["user"], row["device"]], float(row[field]))
            yield family
        for metric, text, field in _USER_COUNTERS:
            family = CounterMetricFamily(metric, text, labels=["user"])
            for user, row in totals.items():
                family.add_metric([user], float(row.get(field) or 0))
            yield family
        device_time = CounterMetricFamily("gpuwb_device_seconds", "device time of all sessions "
                                          "on the device since the pool started", labels=["device"])
        used = snap.get("device_seconds", {})
        for name in sorted({d["device"] for d in status.get("devices", [])} | set(used)):
            device_time.add_metric([name], used.get(name, 0.0))   # 0 until first used
        yield device_time
        requests = CounterMetricFamily("gpuwb_requests", "front-door requests by type",
                                       labels=["type"])
        for kind, count in sorted(snap["requests"].items()):
            requests.add_metric([kind], count)
        yield requests
        errors = CounterMetricFamily("gpuwb_errors", "front-door requests refused, by error",
                                     labels=["error"])
        for name, count in sorted(snap["errors"].items()):
            errors.add_metric([name], count)
        yield errors
        refusals = CounterMetricFamily("gpuwb_auth_refusals", "sign-ins refused, by reason (wrong: "
                                       "a wrong or unknown token; throttled: backing off after "
                                       "failures; busy: too many checks at once)", labels=["reason"])
        for reason in ("wrong", "throttled", "busy"):
            refusals.add_metric([reason], snap.get("auth_refusals", {}).get(reason, 0))
        yield refusals
        yield CounterMetricFamily("gpuwb_auth_hashes", "tokens hashed (scrypt) to check them",
                                  value=snap.get("auth_hashes", 0))
        yield CounterMetricFamily("gpuwb_starts_given_up", "new workers ended for not saying "
                                  "ready within the pool's ready_timeout (each replaced)",
                                  value=snap.get("starts_given_up", 0))
        yield CounterMetricFamily("gpuwb_agent_send_failures", "messages the front door could "
                                  "not write to a host's agent (its host is then lost)",
                                  value=snap.get("agent_send_failures", 0))


def serve_metrics(snapshot: Any, port: int, address: str = "127.0.0.1") -> Any:
    """Serve ``/metrics`` on *address*:*port* (0: any free port) in a thread of its own;
    returns the HTTP server (``server_port``, ``shutdown()``)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PoolCollector(snapshot))
    server, _thread = start_http_server(port, addr=address, registry=registry)
    return server
