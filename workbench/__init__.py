"""The parts users touch: the ``gpuwb`` command (and, later, the Jupyter kernel and magics)."""

__version__ = "0.1.0"
