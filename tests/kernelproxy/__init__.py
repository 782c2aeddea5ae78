"""Tests of the client: the proxy cupy, its arrays and ops, differential tests against NumPy."""
