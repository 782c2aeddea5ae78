"""A local multi-node Ray cluster in a process of its own.

    python -m tests.cluster.ray_nodes        (started by tests/cluster/test_ray_pool.py)

It starts ``ray.cluster_utils.Cluster`` (a head declaring ``sys.argv[1]`` GPUs, named
``head``; no dashboard), prints
``address HOST:PORT``, then obeys one command per line on stdin, answering one line each:
``add NAME GPUS`` (a node declaring GPUS GPUs: ``added NAME``), ``remove NAME``
(``removed NAME``), ``quit`` (shuts the cluster down). (Not under ``nice``: on a loaded
2-core machine Ray's head then missed its own start-up deadline.)
"""

from __future__ import annotations

import sys


def main() -> int:
    from ray.cluster_utils import Cluster
    # the head is the first GPU node (one raylet fewer than a head of its own: on CI's two
    # cores every Ray process counts)
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "num_gpus": int(sys.argv[1]) if len(sys.argv) > 1 else 0,
        "include_dashboard": False})
    nodes = {"head": cluster.head_node}
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
