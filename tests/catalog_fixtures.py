"""A small hand-built catalogue for the catalog tests.

Built here rather than read from ``catalog/data/systems.json`` so that ranking
orders, ties and counts are fixed by the test, whatever the data file holds.
The entries echo real ones (the two Orions, an accented institution, a
three-valued ``code_public``) plus one whose text is hostile to HTML and rich
markup.
"""

from __future__ import annotations

from catalog.models import Catalog, System


def _system(**fields) -> System:
    fields.setdefault("seed", "test")
    return System.model_validate(fields)


def small_catalog() -> Catalog:
    return Catalog(systems=[
        _system(key="reef", name="REEF", title="Microsecond-scale Preemption for Concurrent "
                "GPU-accelerated DNN Inferences", venue="OSDI", year=2022, institutions=["SJTU"],
                category="temporal-sharing", kind="research-system",
                mechanisms=["kernel-preemption", "kernel-padding"], code_public=True,
                links=[{"kind": "paper", "url": "https://www.usenix.org/osdi22/han"},
                       {"kind": "code", "url": "https://github.com/SJTU-IPADS/reef"}],
                ideas=["GPU kernel preemption; dynamic kernel padding."],
                relation="We do not preempt kernels.", identifiers={"doi": "10.1/reef"}),
        _system(key="tgs", name="TGS", title="Transparent GPU Sharing in Container Clouds",
                venue="NSDI", year=2023, institutions=["PKU"], category="temporal-sharing",
                kind="research-system", mechanisms=["rate-control", "unified-memory",
                                                    "containers"],
                links=[{"kind": "code", "url": "https://github.com/pkusys/TGS"}],
                ideas=["Adaptive rate control, unlike Gemini's token scheduling."]),
        _system(key="gemini", name="Gemini", title="Enabling Multi-Tenant GPU Sharing Based on "
                "Kernel Burst Estimation", venue="TCC", year=2021,
                institutions=["National Tsing Hua University"], category="temporal-sharing",
                kind="research-system", mechanisms=["fine-grained-allocation",
                                                    "kernel-co-launch"], code_public=True),
        _system(key="kubeshare", name="KubeShare", venue="HPDC", year=2020,
                institutions=["National Tsing Hua University"], category="temporal-sharing",
                kind="research-system", mechanisms=["kubernetes", "api-remoting"]),
        _system(key="rcuda", name="rCUDA", venue="HPCS", year=2010,
                institutions=["Universidad Politécnica de Valencia", "Universidad Jaume I"],
                category="remote-cuda", kind="research-system", mechanisms=["api-remoting"],
                links=[{"kind": "homepage", "url": "http://www.rcuda.net/"}],
                ideas=["Remote GPU acceleration; HPC clusters."]),
        _system(key="orion", name="Orion", title="Orion: Interference-aware, Fine-grained GPU "
                "Sharing for ML Applications", venue="EuroSys", year=2024, institutions=["ETH"],
                category="temporal-sharing", kind="research-system",
                mechanisms=["api-interception", "stream-priorities"]),
        _system(key="virtai-orion", name="VirtAI Tech Orion", category="industrial-product",
                kind="product", code_public=True,
                links=[{"kind": "code", "url": "https://github.com/virtaitech/orion",
                        "note": "in Chinese"}]),
        _system(key="nvidia-mig", name="NVIDIA MIG", category="spatial-sharing",
                kind="hardware-feature", mechanisms=["mig", "hardware-partitioning"],
                links=[{"kind": "homepage", "url": "https://www.nvidia.com/mig/"}]),
        _system(key="dxpu", name="DxPU", venue="ACM Transactions on Architecture and Code "
                "Optimization (TACO)", year=2023, category="datacenter-pooling",
                kind="research-system", mechanisms=["performance-modeling"], code_public=False,
                identifiers={"arxiv": "2310.04648"}),
    ])


def hostile_system() -> System:
    """Text that must come out escaped: HTML tags, ampersands, rich markup brackets."""
    return _system(key="evil", name="<b>Evil</b> & [bold red]Co[/]",
                   title='<script>alert("x")</script>', venue="A&B", year=2020,
                   institutions=["[link=http://x]Lab[/link]"], category="rpc",
                   kind="research-system",
                   links=[{"kind": "paper", "url": 'https://example.org/p?a=1&b="2"'}],
                   relation="<i>ours</i>")
