"""Tests of the pool: front door, workers, arbiter, protocol, devices, attacks on them."""
