"""The parts users touch: the ``gpuwb`` command, the Jupyter kernel and the magics.

    %load_ext workbench     # in IPython: %gpu, %%gpu_time, and %catalog
"""

__version__ = "0.1.0"

__all__ = ["__version__", "load_ipython_extension"]


def load_ipython_extension(ipython) -> None:
    """``%load_ext workbench``: register ``%gpu`` and ``%%gpu_time``, and load ``catalog``.

    Connects nothing: in a plain IPython, ``%gpu connect ADDRESS`` opens a
    session (the remote-GPU kernel opens one at start).
    """
    from .magics import GPUMagics

    ipython.register_magics(GPUMagics)
    ipython.extension_manager.load_extension("catalog")
