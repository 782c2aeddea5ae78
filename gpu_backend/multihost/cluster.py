"""Ray's part of a pool across hosts: one agent per GPU node, and news of nodes lost.

``gpuwb-backend serve --cluster ADDRESS`` joins an existing Ray cluster (``ray start
--head`` and ``ray start --address`` on the hosts, or Ray on Kubernetes) as a driver.
A watcher thread looks at the cluster's nodes every half second. On each live node that
declares GPUs it deploys one :class:`AgentActor`, pinned to that node (node affinity,
never soft) and holding all of the node's GPUs, so Ray places nothing else on them and
gives the agent the node's ``CUDA_VISIBLE_DEVICES``; the agent then joins the front door
by itself over ZeroMQ (:mod:`gpu_backend.multihost.host_agent`), with a secret passed here through
Ray. Which GPU a session gets is the front door's placement, never Ray's.

What the watcher learns goes to the front door's loop as news (``HostDeployed``: an
agent deployed with its secret; ``HostGone``: a node that left the cluster, or an agent
whose ping fails, ``RayActorError``: its process or node died), through the loop's
:class:`~gpu_backend.runtime.wake_queue.WakeQueue` (:mod:`gpu_backend.multihost.across_hosts`): the watcher
changes none of the front door's tables itself. The loop then takes the secret, or ends
that host's sessions. Nothing on an op's path, and nothing per hello, goes through Ray: a
Ray actor call costs about a millisecond.

Ray is an extra (``pip install 'gpu-workbench[cluster]'``), imported only here.
"""

from __future__ import annotations

import logging
import secrets
import threading
from typing import Any

from gpu_backend.multihost.host_news import HostDeployed, HostGone
from gpu_backend.config import PoolSettings
from gpu_backend.runtime.wake_queue import WakeQueue

__all__ = ["AgentActor", "HostNames", "RayHosts", "AGENT_SETTINGS"]

log = logging.getLogger("gpu_backend.multihost.cluster")

#: The pool settings an agent's workers and arbiter follow (the rest is the front door's):
#: every one its arbiter's policy and company options read (PoolSettings.policy_options,
#: company_options), so that an agent's devices are shared as the pool's own are.
AGENT_SETTINGS = ("policy", "quantum_ms", "period_ms", "worker_zygote", "worker_spin_ms",
                  "spin_slots", "preempt_patience_ms", "patience_by_op", "gap_rule",
                  "share_window_ms", "share_fill", "share_deep_lead_ms", "share_light_gap_ms",
                  "share_gap_charge_ms", "share_forget_idle_ms", "share_assume_silent",
                  "company_idle_ms", "share_light_company",
                  "share_deep_company", "share_anticipate_batch_ms")
#: Seconds between two looks at the cluster's nodes and agents.
SURVEY_EVERY = 0.5
#: Seconds a ping may take before the agent is pinged again (a slow agent is not lost).
PING_WAIT = 5.0


class HostNames:
    """The names the pool gives its hosts: a Ray node's host name, with ``-2``, ``-3``, ...
    for several nodes of one machine. A name is never given twice in the pool's life, not
    even once its host is lost: a node that joins after another left is a new host, and
    reusing the lost one's name merged the two in the status and the usage log (whose
    device names begin with the host's)."""

    def __init__(self) -> None:
        #: every name given so far (hosts live and lost)
        self.given: set[str] = set()

    def name(self, node: dict) -> str:
        """A fresh name for the Ray node *node* (a row of ``ray.nodes()``)."""
        base = str(node.get("NodeManagerHostname") or node.get("NodeManagerAddress") or "host")
        base = "".join(c if c.isalnum() or c in "-_." else "-" for c in base)[:60] or "host"
        name, k = base, 1
        while name in self.given:
            k += 1
            name = f"{base}-{k}"
        self.given.add(name)
        return name


class AgentActor:
    """A host's agent as a Ray actor: starts :class:`~gpu_backend.multihost.host_agent.HostAgent`
    in a thread of the actor's process and answers pings while it runs."""

    def __init__(self, door: str, name: str, secret: str, server_key: bytes | None,
                 key_text: str | None, settings: dict, numpy: bool) -> None:
        import ray

        from gpu_backend.multihost.host_agent import HostAgent
        gpus = len(ray.get_gpu_ids())
        devices = [f"{'cpu' if numpy else 'cuda'}:{k}" for k in range(gpus)]
        own = PoolSettings(**settings)   # (with this host's GPUWB_* variables)
        address = own.agent_address or ray.util.get_node_ip_address()
        if ":" in address and not address.startswith("["):
            address = f"[{address}]"   # (IPv6: a worker's URL needs brackets)
        self.agent = HostAgent(door, name, secret, address, devices, own, server_key, key_text)
        self.thread = threading.Thread(target=self.agent.run, name="gpuwb-agent", daemon=True)
        self.thread.start()

    def ping(self) -> bool:
        """True while the agent serves; raises once it has stopped (refused, told to, or
        its connection to the front door lost)."""
        if not self.thread.is_alive():
            agent = self.agent
            raise RuntimeError(f"the agent has stopped: "
                               f"{agent.refused or agent.lost_door or 'told to stop'}")
        return True

    def stop(self) -> None:
        self.agent.stop()
        self.thread.join(30)


class RayHosts:
    """Deploy agents on the Ray cluster at *address* that join the front door's agents
    socket at *agents_address*; tell the front door's loop, through *news*, each agent
    deployed and each host lost."""

    def __init__(self, address: str, agents_address: str, news: WakeQueue,
                 settings: PoolSettings, server_key: bytes | None, key_text: str | None) -> None:
        import ray
        self._ray = ray
        ray.init(address=address, namespace="gpu-workbench", log_to_driver=False,
                 logging_level=logging.WARNING)
        self._agents_address = agents_address
        #: HostDeployed and HostGone, for the front door's loop (it polls the queue's fd)
        self._news = news
        self._agent_args = (server_key, key_text,
                            {k: getattr(settings, k) for k in AGENT_SETTINGS},
                            settings.cluster_devices == "numpy")
        self._agents: dict[str, tuple[str, Any]] = {}   # node id -> (host name, actor)
        self._names = HostNames()                       # (lost hosts' names among them)
        self._failed: set[str] = set()                  # nodes whose agent could not start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="gpuwb-ray-watch", daemon=True)
        self._thread.start()

    @staticmethod
    def node_address() -> str:
        """This process's node address, as Ray sees it (for agents to reach the door)."""
        import ray
        return ray.util.get_node_ip_address()

    # ------------------------------------------------------------ the front door's calls
    def close(self) -> None:
        """Stop watching; the agents end (Ray ends a driver's actors as it leaves)."""
        self._stop.set()
        self._thread.join(10)
        for _, actor in self._agents.values():
            try:
                self._ray.kill(actor)
            except Exception:   # (already gone)
                pass
        self._ray.shutdown()

    # ------------------------------------------------------------ the watcher
    def _watch(self) -> None:
        while not self._stop.wait(SURVEY_EVERY):
            try:
                self._survey()
            except Exception:   # (the Ray cluster's own troubles: try again)
                log.exception("looking at the Ray cluster failed")

    def _survey(self) -> None:
        ray = self._ray
        nodes = {node["NodeID"]: node for node in ray.nodes()}
        for node_id, node in nodes.items():
            gpus = int(node.get("Resources", {}).get("GPU", 0)) if node.get("Alive") else 0
            if gpus and node_id not in self._agents and node_id not in self._failed:
                self._deploy(node_id, node, gpus)
        for node_id in list(self._agents):
            node = nodes.get(node_id)
            if node is None or not node.get("Alive"):
                self._report(node_id, "its node left the Ray cluster")
        pings = {actor.ping.remote(): node_id for node_id, (_, actor) in self._agents.items()}
        if not pings:
            return
        ready, _ = ray.wait(list(pings), num_returns=len(pings), timeout=PING_WAIT)
        for ref in ready:
            try:
                ray.get(ref)
            except Exception as exc:   # RayActorError (died, or never started), our own
                why = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
                self._report(pings[ref], f"its agent is gone ({why})")

    def _deploy(self, node_id: str, node: dict, gpus: int) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        name = self._names.name(node)
        secret = secrets.token_urlsafe(24)
        # (put before the actor exists: the loop reads its join only after this news)
        self._news.put(HostDeployed(name, secret))
        server_key, key_text, settings, numpy = self._agent_args
        actor = self._ray.remote(AgentActor).options(
            num_cpus=0, num_gpus=gpus, max_restarts=0, max_concurrency=4,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
        ).remote(self._agents_address, name, secret, server_key, key_text, settings, numpy)
        self._agents[node_id] = (name, actor)
        log.info("deployed the agent of host %s (node %s, %d GPUs)", name, node_id[:12], gpus)

    def _report(self, node_id: str, why: str) -> None:
        name, actor = self._agents.pop(node_id)
        self._failed.add(node_id)   # (a node that comes back gets a new id from Ray)
        try:
            self._ray.kill(actor)
        except Exception:
            pass
        log.warning("host %s lost: %s", name, why)
        self._news.put(HostGone(name, why))   # (the loop withdraws its secret, ends its sessions)
