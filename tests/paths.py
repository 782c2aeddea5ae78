"""Where the project's files are, for tests in any folder under tests/."""

from pathlib import Path

__all__ = ["PROJECT_ROOT", "TESTS"]

#: the tests folder, and the repository's root above it
TESTS = Path(__file__).resolve().parent
PROJECT_ROOT = TESTS.parent
