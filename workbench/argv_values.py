"""Options whose values may begin with "-", glued to them before argparse reads the line.

argparse takes a word that begins with "-" for the next option and fails with "expected one
argument". A generated token (urlsafe base64) begins with "-" about once in 64, and a Z85 key
about once in 85: both reach ``--token`` / ``--server-key`` as they are, so each such option is
joined to the word after it (``--token -x`` -> ``--token=-x``), which argparse reads as the value.
A next word that reads as an option name (``--devices``, ``-h``) is left alone, so a missing
value still gets argparse's own "expected one argument".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["glue_option_values", "KEY_AND_TOKEN_OPTIONS"]

#: The options of ``gpuwb`` whose values are keys or paths (a token file may be named "-x").
KEY_AND_TOKEN_OPTIONS = ("--server-key", "--token-file")

_OPTION_NAME = re.compile(r"--[a-z][a-z-]*|-[a-zA-Z]")


def glue_option_values(argv: Iterable[str], options: Iterable[str]) -> list[str]:
    """``argv`` with each of ``options`` joined by "=" to the word that follows it."""
    opaque = frozenset(options)
    words = list(argv)
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if (word in opaque and i + 1 < len(words)
                and not _OPTION_NAME.fullmatch(words[i + 1])):
            out.append(f"{word}={words[i + 1]}")
            i += 2
        else:
            out.append(word)
            i += 1
    return out
