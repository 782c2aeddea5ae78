"""Tests of the catalogue: data, queries, rendering, the %catalog magic and its CLI."""
