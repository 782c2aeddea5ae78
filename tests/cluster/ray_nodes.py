"""A local multi-node Ray cluster in a process of its own.

    python -m tests.cluster.ray_nodes        (started by tests/cluster/test_ray_pool.py)

It starts ``ray.cluster_utils.Cluster`` (a head without GPUs and no dashboard), prints
``address HOST:PORT``, then obeys one command per line on stdin, answering one line each:
``add NAME GPUS`` (a node declaring GPUS GPUs: ``added NAME``), ``remove NAME``
(``removed NAME``), ``quit`` (shuts the cluster down). (Not under ``nice``: on a loaded
2-core machine Ray's head then missed its own start-up deadline.)
"""

from __future__ import annotations

import sys


def main() -> int:
    from ray.cluster_utils import Cluster
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "num_gpus": 0, "include_dashboard": False})
    nodes = {}
    print(f"address {cluster.address}", flush=True)
    try:
        for line in sys.stdin:
            command = line.split()
            if not command:
                continue
            if command[0] == "add":
                nodes[command[1]] = cluster.add_node(num_cpus=1, num_gpus=int(command[2]))
                print(f"added {command[1]}", flush=True)
            elif command[0] == "remove":
                cluster.remove_node(nodes.pop(command[1]))
                print(f"removed {command[1]}", flush=True)
            elif command[0] == "quit":
                break
    finally:
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
