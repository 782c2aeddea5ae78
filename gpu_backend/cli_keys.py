"""``gpuwb-backend keys --out FILE [--force]``: make the pool's CurveZMQ key pair.

Writes the secret key file FILE (mode 0600; the pool reads it with
``--key-file FILE``) and FILE.pub (the public key, which clients pin), and
prints the public key.
"""

from __future__ import annotations

import argparse
import sys

from .security import generate_keypair

__all__ = ["register", "keys"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "keys", help="make the pool's CurveZMQ key pair (for --key-file)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, metavar="FILE",
                        help="the secret key file to write; the public key goes to FILE.pub")
    parser.add_argument("--force", action="store_true", help="replace existing files")
    parser.set_defaults(func=keys)


def keys(args: argparse.Namespace) -> int:
    try:
        secret_path, public_path, public = generate_keypair(args.out, force=args.force)
    except (FileExistsError, OSError) as exc:
        print(f"gpuwb-backend keys: {exc}", file=sys.stderr)
        return 1
    print(f"public key: {public.decode()}")
    print(f"secret key file: {secret_path} (mode 0600; serve with --key-file {secret_path})")
    print(f"public key file: {public_path} (give it to clients: server_key=, "
          "GPUWB_SERVER_KEY_FILE or a known_pools line)")
    return 0
