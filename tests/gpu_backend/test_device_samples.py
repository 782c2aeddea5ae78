"""The pool's samples of its devices (issue 39, item 9): busy time from the accounting,
memory, NVML where it can be read, a window of history. The sampler is plain bookkeeping,
fed here the figures the front door would feed it, at times the test chooses."""

from __future__ import annotations

import pytest

from gpu_backend.hosts.device_samples import NOT_A_GPU, DeviceSampler
from gpu_backend.hosts.nvml import NO_PACKAGE, NvmlReader

GiB = 1 << 30


def test_busy_is_the_device_time_used_in_each_interval():
    sampler = DeviceSampler(["cpu:0", "cpu:1"])
    sampler.sample({"cpu:0": 0}, {}, now=1000.0)
    sampler.sample({"cpu:0": GiB}, {"cpu:0": 1.0}, now=1002.0)          # 1 s of 2
    sampler.sample({"cpu:0": GiB}, {"cpu:0": 4.0, "cpu:1": 0.5}, now=1004.0)  # 3 s of 2: all
    history = sampler.history(60, now=1005.0)
    zero = history["cpu:0"]
    assert zero["t0"] == 1000.0 and zero["step"] == 2.0
    assert zero["busy"] == [None, 0.5, 1.0]     # (no interval before the first sample)
    assert zero["memory"] == [0, GiB, GiB]
    assert history["cpu:1"]["busy"] == [None, 0.0, 0.25] and history["cpu:1"]["memory"] == [0, 0, 0]
    assert zero["utilization"] is None and zero["nvml_memory"] is None
    assert zero["nvml"] == NOT_A_GPU
    assert sampler.latest()["cpu:0"] == {"busy": 1.0, "memory": GiB, "utilization": None,
                                         "nvml_memory": None, "memory_total": None}
    # a window: only the samples of its last seconds
    assert sampler.history(2.5, now=1005.0)["cpu:0"]["busy"] == [1.0]


def test_history_is_kept_for_a_while_only():
    sampler = DeviceSampler(["cpu:0"], step=2.0, keep=10.0)
    for k in range(20):
        sampler.sample({"cpu:0": k}, {"cpu:0": 0.0}, now=1000.0 + 2 * k)
    assert sampler.history(600, now=1040.0)["cpu:0"]["memory"] == list(range(14, 20))


def test_nvml_reads_a_gpu_or_says_why_not():
    """With nvidia-ml-py and a GPU (the GPU machine), NVML's figures; without (CI), the
    reason, Nones, and no exception."""
    reader = NvmlReader()
    try:
        utilization, used, total = reader.read(None, 0)
        if reader.status == "ok":
            assert 0 <= utilization <= 1 and 0 < used <= total
        else:
            assert reader.status == NO_PACKAGE or reader.status.startswith(
                ("NVML did not start", "NVML cannot read")), reader.status
            assert (utilization, used, total) == (None, None, None)
    finally:
        reader.close()


def test_a_gpu_device_without_nvml_is_sampled_and_says_why():
    sampler = DeviceSampler(["cuda:0"])
    if sampler.note("cuda:0") == "ok":
        sampler.close()
        pytest.skip("NVML reads a GPU here: test_nvml_reads_a_gpu_or_says_why_not covers it")
    sampler.sample({"cuda:0": 5}, {"cuda:0": 0.0}, {"cuda:0": "0000:3B:00.0"}, now=10.0)
    sampler.sample({"cuda:0": 7}, {"cuda:0": 1.0}, {"cuda:0": "0000:3B:00.0"}, now=12.0)
    samples = sampler.history(60, now=13.0)["cuda:0"]
    assert samples["busy"] == [None, 0.5] and samples["memory"] == [5, 7]
    assert samples["utilization"] == [None, None] and samples["nvml_memory"] == [None, None]
    assert samples["nvml"] != "ok" and samples["nvml"]
    sampler.close()
