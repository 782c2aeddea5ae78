"""The GPU pool: front door, session workers, devices and the wire protocol."""

__version__ = "0.1.0"
