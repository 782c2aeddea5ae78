"""``gpuwb-backend users``: add, list, change and remove the users of a users file.

The file is the one a pool serves with ``--users-file`` (see ``docs/fair-share.md``,
"Users"); a running pool notices each change by itself, so nothing here talks to it.
Errors (unknown user, bad size, unreadable file) print one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from pydantic import ValidationError

from gpu_backend.accounting.users import (
    User,
    UsersFileError,
    format_size,
    hash_token,
    load_users,
    new_token,
    parse_size,
    save_users,
)

__all__ = ["register"]

_EPILOG = ("A running pool rereads the file by itself within a second of a change (it watches "
           "the modification time; SIGHUP forces it): no restart is needed. Removing a user "
           "ends their sessions; a new token makes the old one stop working.")


class _Failure(Exception):
    """An error to report on stderr with exit code 2."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``users`` and its commands to ``gpuwb-backend``."""
    parser = subparsers.add_parser(
        "users", help="the users file: add, list, set, remove",
        description="Manage the users file (TOML) of a pool that runs with --users-file.",
        epilog=_EPILOG)
    parser.add_argument("--file", metavar="F",
                        help="the users file (default: $GPUWB_USERS_FILE)")
    sub = parser.add_subparsers(dest="users_command", required=True, metavar="COMMAND")

    add = sub.add_parser("add", help="add a user and print their token (once)", epilog=_EPILOG)
    add.add_argument("name", help="1 to 64 of A-Z a-z 0-9 _ -")
    add.add_argument("--weight", type=float, default=1.0, help="share of a device (default 1)")
    add.add_argument("--memory", metavar="SIZE", help="device-memory quota, e.g. 16GiB")
    add.add_argument("--sessions", metavar="N", help="most sessions at once")
    add.set_defaults(func=_run(_add))

    ls = sub.add_parser("list", help="the users, their weights and quotas (never tokens)")
    ls.add_argument("--json", action="store_true", help="a JSON list instead of a table")
    ls.set_defaults(func=_run(_list))

    st = sub.add_parser("set", help="change a user's weight, quotas or token", epilog=_EPILOG)
    st.add_argument("name")
    st.add_argument("--weight", type=float)
    st.add_argument("--memory", metavar="SIZE|none", help="device-memory quota, or none")
    st.add_argument("--sessions", metavar="N|none", help="most sessions at once, or none")
    st.add_argument("--new-token", action="store_true", help="replace the token and print the new one")
    st.set_defaults(func=_run(_set))

    rm = sub.add_parser("remove", help="remove a user (their sessions end)", epilog=_EPILOG)
    rm.add_argument("name")
    rm.set_defaults(func=_run(_remove))


def _run(command):
    """Wrap a command: resolve the file, turn expected errors into a message and exit 2."""
    def run(args: argparse.Namespace) -> int:
        path = args.file or os.environ.get("GPUWB_USERS_FILE")
        try:
            if not path:
                raise _Failure("no users file: pass --file or set GPUWB_USERS_FILE")
            return command(Path(path), args)
        except (_Failure, UsersFileError) as exc:
            message = str(exc)
        except OSError as exc:                  # reading is a UsersFileError: this is writing
            message = f"cannot write {path}: {exc.strerror or exc}"
        print(f"gpuwb-backend users: error: {message}", file=sys.stderr)
        return 2
    return run


_RULES = {"name": "1 to 64 of A-Z a-z 0-9 _ -", "weight": "more than 0, at most 1000",
          "memory": "at least 1MiB", "sessions": "at least 1"}


def _user(**fields) -> User:
    """A validated :class:`User`; a field out of range is a :class:`_Failure` naming the rule."""
    try:
        return User(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        field, value = first["loc"][0], first["input"]
        shown = format_size(value) if field == "memory" and isinstance(value, int) and value >= 0 \
            else f"{value:g}" if isinstance(value, float) else repr(value)
        raise _Failure(f"invalid {field} {shown}: {_RULES.get(field, first['msg'])}") from None


def _optional(option: str, text: str | None, parse) -> int | None:
    """*text* parsed, or None for an absent option or the word ``none`` (no quota)."""
    if text is None or text.strip().lower() == "none":
        return None
    try:
        return parse(text)
    except ValueError as exc:
        raise _Failure(f"{option}: {exc}") from None


def _memory(text: str | None) -> int | None:
    return _optional("--memory", text, parse_size)


def _sessions(text: str | None) -> int | None:
    return _optional("--sessions", text, _whole_number)


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"not a whole number: {text!r}") from None


def _known(path: Path, name: str) -> dict[str, User]:
    users = load_users(path)
    if name not in users:
        raise _Failure(f"no user {name!r} in {path}")
    return users


def _print_token(name: str, token: str) -> None:
    print(token, flush=True)
    print(f"(the token for {name} is shown only this once: pass it on to {name} now)",
          file=sys.stderr)


def _describe(user: User) -> str:
    memory = format_size(user.memory) if user.memory is not None else "no memory quota"
    sessions = f"{user.sessions} sessions" if user.sessions is not None else "no session limit"
    return f"{user.name}: weight {user.weight:g}, {memory}, {sessions}"


def _add(path: Path, args: argparse.Namespace) -> int:
    users = load_users(path) if path.exists() else {}
    if args.name in users:
        raise _Failure(f"user {args.name!r} exists in {path} (use 'users set')")
    user = _user(name=args.name, token_hash="", weight=args.weight,       # validated first
                 memory=_memory(args.memory), sessions=_sessions(args.sessions))
    token = new_token(args.name)
    users[args.name] = user.model_copy(update={"token_hash": hash_token(token)})
    save_users(path, users)
    _print_token(args.name, token)
    return 0


def _list(path: Path, args: argparse.Namespace) -> int:
    users = load_users(path)
    if args.json:
        rows = [user.model_dump(exclude={"token_hash"}) for _, user in sorted(users.items())]
        print(json.dumps(rows, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"users in {path}", title_justify="left")
    for column, justify in (("name", "left"), ("weight", "right"), ("memory", "right"),
                            ("sessions", "right")):
        table.add_column(column, justify=justify)
    for name, user in sorted(users.items()):
        table.add_row(name, f"{user.weight:g}",
                      format_size(user.memory) if user.memory is not None else "—",
                      str(user.sessions) if user.sessions is not None else "—")
    Console().print(table)
    return 0


def _set(path: Path, args: argparse.Namespace) -> int:
    users = _known(path, args.name)
    update: dict = {}
    if args.weight is not None:
        update["weight"] = args.weight
    if args.memory is not None:
        update["memory"] = _memory(args.memory)
    if args.sessions is not None:
        update["sessions"] = _sessions(args.sessions)
    if not update and not args.new_token:
        raise _Failure("nothing to change: give --weight, --memory, --sessions or --new-token")
    user = _user(**{**users[args.name].model_dump(), **update})      # validated
    token = new_token(args.name) if args.new_token else None
    if token is not None:
        user = user.model_copy(update={"token_hash": hash_token(token)})
    users[args.name] = user
    save_users(path, users)
    print(_describe(user), file=sys.stderr)
    if token is not None:
        _print_token(args.name, token)
    return 0


def _remove(path: Path, args: argparse.Namespace) -> int:
    users = _known(path, args.name)
    del users[args.name]
    save_users(path, users)
    print(f"removed {args.name}; a running pool ends their sessions within a second",
          file=sys.stderr)
    return 0
