"""One pool across hosts: GPU hosts joining the front door through their agents.

Holds ``remote_host`` (a host as the door sees it through its agent), ``host_agent`` (the
agent on a GPU host), ``agent_door`` (the door's socket for agents), ``across_hosts``
(hosts joining and lost), ``host_news`` (what Ray's watcher hands the loop) and
``cluster`` (Ray: deploys agents, reports nodes lost; the only module that imports Ray).

May import: ``hosts``, ``runtime``, ``protocol``, ``config`` and ``security``; never the
front door, which imports it.
"""

__all__: list[str] = []
