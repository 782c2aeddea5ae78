"""Tests of the whole: structure, public API, settings, fresh install, benchmarks' own tests."""
