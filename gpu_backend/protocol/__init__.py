"""The wire protocol shared by the pool and its clients.

The only part of :mod:`gpu_backend` that :mod:`kernelproxy` may import. May import: the
standard library, NumPy and msgpack; nothing else of ``gpu_backend``.
"""

from . import api, codec, errors, messages
from .messages import PROTOCOL_VERSION

__all__ = ["api", "codec", "errors", "messages", "PROTOCOL_VERSION"]
