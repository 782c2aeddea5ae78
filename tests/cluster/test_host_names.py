"""The names a pool across hosts gives its Ray nodes (gpu_backend.multihost.cluster.HostNames), without
Ray: rows shaped as ``ray.nodes()`` gives them. End to end, on a local Ray cluster:
tests/cluster/test_ray_pool.py (a node that joins after one left)."""

from __future__ import annotations

from gpu_backend.multihost.cluster import HostNames


def _node(hostname: str | None, address: str = "10.0.0.7") -> dict:
    return {"NodeID": "f" * 56, "Alive": True, "NodeManagerHostname": hostname,
            "NodeManagerAddress": address, "Resources": {"GPU": 1.0}}


def test_nodes_of_one_machine_are_numbered_and_no_name_is_given_twice():
    """vm, vm-2, vm-3 for three nodes of machine vm; a node that comes after one of them was
    lost gets vm-4, never the lost host's name (the usage log and the status would take the
    two machines for one)."""
    names = HostNames()
    assert [names.name(_node("vm")) for _ in range(3)] == ["vm", "vm-2", "vm-3"]
    # (nothing is ever handed back: vm-2's node leaving the cluster frees no name)
    assert names.name(_node("vm")) == "vm-4"
    assert names.name(_node("other")) == "other"
    assert names.given == {"vm", "vm-2", "vm-3", "vm-4", "other"}


def test_a_name_is_made_of_safe_characters_from_the_host_name_or_address():
    names = HostNames()
    assert names.name(_node("gpu box/1")) == "gpu-box-1"
    assert names.name(_node(None, "10.0.0.7")) == "10.0.0.7"
    assert names.name(_node(None, "")) == "host"
    assert names.name(_node("x" * 80)) == "x" * 60
