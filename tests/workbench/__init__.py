"""Tests of the kernel, %gpu, gpuwb, the Jupyter server extension and Lab in a browser."""
