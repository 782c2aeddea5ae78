"""Options whose values may begin with "-", glued to them before argparse reads the line.

argparse takes a word that begins with "-" for the next option and fails with "expected one
argument". A generated token (urlsafe base64) begins with "-" about once in 64, and a Z85 key
about once in 85: both reach ``--token`` / ``--server-key`` as they are, so each such option is
joined to the word after it (``--token -x`` -> ``--token=-x``), which argparse reads as the value.
"""

from __future__ import annotations

from collections.abc import Iterable


def glue_option_values(argv: Iterable[str], options: Iterable[str]) -> list[str]:
    """``argv`` with each of ``options`` joined by "=" to the word that follows it."""
    opaque = frozenset(options)
    out: list[str] = []
    words = iter(argv)
    for word in words:
        if word in opaque:
            value = next(words, None)
            out.append(word if value is None else f"{word}={value}")
        else:
            out.append(word)
    return out
