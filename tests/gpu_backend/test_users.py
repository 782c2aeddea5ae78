"""Users, tokens, the users file, the registry the front door checks tokens with, and
``gpuwb-backend users``. Real files in tmp_path; the command runs as a real subprocess.

scrypt costs tens of milliseconds a call: the tests verify a handful of tokens, not hundreds.
"""

import json
import logging
import os
import stat
import subprocess
import sys
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from gpu_backend.protocol.errors import AuthenticationError
from gpu_backend.accounting.users import (
    DEFAULT_USER,
    Reload,
    User,
    UserRegistry,
    UsersFileError,
    format_size,
    hash_token,
    load_users,
    new_token,
    parse_size,
    save_users,
    token_user,
    verify_token,
)

GIB = 1 << 30


# -- tokens and hashes --------------------------------------------------------------------

def test_tokens_name_their_user():
    token = new_token("alice")
    name, secret = token.split(".")
    assert name == "alice" and len(secret) == 43 and token != new_token("alice")
    assert token_user(token) == "alice"
    assert token_user("bob-2_x.anything") == "bob-2_x"
    for bad in ("no-dot", ".secret", "al ice.secret", "a/b.secret", "x" * 65 + ".s", None, 42, b"a.b"):
        assert token_user(bad) is None
    for bad in ("", "a.b", "a b", "x" * 65):
        with pytest.raises(ValueError):
            new_token(bad)


@pytest.fixture(scope="module")
def alice_token_hash():
    token = new_token("alice")
    return token, hash_token(token)


def test_hash_and_verify(alice_token_hash):
    token, token_hash = alice_token_hash
    kind, n, r, p, _salt, _digest = token_hash.split("$")
    assert (kind, n, r, p) == ("scrypt", "16384", "8", "1")
    assert token not in token_hash and hash_token(token) != token_hash     # a fresh salt each time
    assert verify_token(token, token_hash)
    assert not verify_token(token + "x", token_hash)


def test_malformed_hashes_are_false_not_errors(alice_token_hash):
    token, good = alice_token_hash
    _kind, n, r, p, salt, digest = good.split("$")
    bad_hashes = [
        "", "scrypt", token, good + "$", good.replace("scrypt", "bcrypt"),
        f"scrypt$16383${r}${p}${salt}${digest}",            # n not a power of two
        f"scrypt$1${r}${p}${salt}${digest}",
        f"scrypt${n}$0${p}${salt}${digest}",
        f"scrypt${n}${r}$0${salt}${digest}",
        f"scrypt${n}${r}${p}$!!notbase64${digest}",
        f"scrypt${n}${r}${p}${salt}$",
        f"scrypt${n}${r}${p}$AAAA${digest}",                 # a 3-byte salt
        f"scrypt${n}${r}${p}${salt}$AAAA",                   # a 3-byte hash
        f"scrypt$١٦٣٨٤${r}${p}${salt}${digest}",             # digits, but not ASCII ones
        None, 12, b"scrypt$",
    ]
    for bad in bad_hashes:
        assert verify_token(token, bad) is False, bad
    assert verify_token(None, good) is False
    assert verify_token("\udcff", good) is False             # cannot be encoded: False


def test_a_hostile_cost_is_refused_at_once(alice_token_hash):
    token, good = alice_token_hash
    _, _, _, _, salt, digest = good.split("$")
    hostile = [f"scrypt${1 << 30}$8$1${salt}${digest}",      # 1 TiB of memory
               f"scrypt${1 << 20}$8$1${salt}${digest}",
               f"scrypt$16384$999$1${salt}${digest}",
               f"scrypt$16384$8$999${salt}${digest}",
               f"scrypt$65536$16$4${salt}${digest}",          # each within its cap, together not
               f"scrypt$99999999$8$1${salt}${digest}"]
    started = time.perf_counter()
    for bad in hostile:
        assert verify_token(token, bad) is False
    # refused before any scrypt runs: one of them run would take seconds and gigabytes (the
    # bound leaves a loaded machine's stalls room, not a derivation)
    assert time.perf_counter() - started < 0.5


# -- sizes --------------------------------------------------------------------------------

def test_parse_size_examples():
    assert parse_size("16GiB") == 16 * GIB
    assert parse_size("512MiB") == 512 << 20
    assert parse_size("1.5G") == GIB + GIB // 2
    assert parse_size("1000000") == 1_000_000
    assert parse_size("4 GiB") == parse_size("4GB") == parse_size(" 4g ") == 4 * GIB
    assert parse_size("64KiB") == parse_size("64K") == 65536
    assert parse_size("2TiB") == 2 << 40
    assert parse_size("7B") == 7
    for bad in ("", "GiB", "16 XiB", "-1G", "1e9", "1.5", "1GiBB", "16 Gi", "one", "1,5G"):
        with pytest.raises(ValueError, match="size|bytes"):
            parse_size(bad)


def test_format_size_examples():
    assert format_size(16 * GIB) == "16GiB"
    assert format_size(GIB + GIB // 2) == "1.5GiB"
    assert format_size(GIB + GIB // 4) == "1.25GiB"
    assert format_size(512 << 20) == "512MiB"
    assert format_size(1_000_000) == "1000000B"
    assert format_size(0) == "0B"
    with pytest.raises(ValueError):
        format_size(-1)


@given(st.integers(min_value=0, max_value=1 << 70))
def test_format_size_round_trips(n):
    assert parse_size(format_size(n)) == n


@given(st.integers(min_value=0, max_value=1 << 20),
       st.sampled_from([("K", 1 << 10), ("MiB", 1 << 20), ("G", 1 << 30), (" GiB", 1 << 30),
                        ("TB", 1 << 40), ("", 1), ("B", 1)]))
def test_parse_size_scales_by_binary_units(k, unit):
    suffix, factor = unit
    assert parse_size(f"{k}{suffix}") == k * factor


# -- the user model and the file ------------------------------------------------------------

def test_user_model_validates():
    user = User(name="alice", token_hash="h")
    assert (user.weight, user.memory, user.sessions) == (1.0, None, None)
    with pytest.raises(ValidationError):
        user.weight = 2                                        # frozen
    for bad in ({"name": ""}, {"name": "a.b"}, {"name": "x" * 65}, {"weight": 0},
                {"weight": -1}, {"weight": 1001}, {"weight": float("nan")}, {"weight": True},
                {"memory": (1 << 20) - 1}, {"memory": "16GiB"}, {"sessions": 0},
                {"sessions": True}, {"extra": 1}):
        with pytest.raises(ValidationError):
            User(**{"name": "alice", "token_hash": "h", **bad})


def test_save_and_load(tmp_path, alice_token_hash):
    token, token_hash = alice_token_hash
    path = tmp_path / "users.toml"
    users = {"alice": User(name="alice", token_hash=token_hash, weight=2, memory=16 * GIB, sessions=4),
             "bob": User(name="bob", token_hash=token_hash)}
    save_users(path, users)
    assert load_users(path) == users
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert "[users.alice]" in text and "memory = 17179869184" in text
    assert token not in text and text.count("memory") == 1    # absent quotas are not written
    assert [p.name for p in tmp_path.iterdir()] == ["users.toml"]   # no temporary file left
    path.chmod(0o644)
    save_users(path, {})
    assert load_users(path) == {} and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_save_writes_through_a_symlink(tmp_path, alice_token_hash):
    real = tmp_path / "real.toml"
    link = tmp_path / "users.toml"
    link.symlink_to(real)
    save_users(link, {"bob": User(name="bob", token_hash=alice_token_hash[1])})
    assert link.is_symlink() and list(load_users(real)) == ["bob"]


@pytest.mark.parametrize("text, expected", [
    ("[users.alice\n", "not valid TOML.*line 1"),
    ('[users.alice]\ntoken_hash = "{h}"\n\nweight = = 2\n', "not valid TOML.*line 4"),
    ('[users.alice]\ntoken_hash = "{h}"\ncolour = "red"\n', "unknown key 'colour'"),
    ('[users.alice]\ntoken_hash = "{h}"\nweight = 0\n', r"\[users.alice\]: weight: .*greater than 0"),
    ('[users.alice]\ntoken_hash = "{h}"\nweight = "2"\n', "weight"),
    ('[users.alice]\ntoken_hash = "{h}"\nmemory = 1024\n', "memory"),
    ('[users.alice]\ntoken_hash = "{h}"\nsessions = 0\n', "sessions"),
    ('[users.alice]\nweight = 2.0\n', "token_hash is missing"),
    ('[users.alice]\ntoken_hash = "alice.secret-token"\n', "not an scrypt hash"),
    ('[users."a.b"]\ntoken_hash = "{h}"\n', "invalid user name 'a.b'"),
    ('users = 3\n', "'users' must be a table"),
    ('users = {{ alice = 3 }}\n', r"\[users.alice\]: must be a table"),
    ('[people.alice]\ntoken_hash = "{h}"\n', "unknown key 'people'"),
    (b"\xff\xfe", "not UTF-8"),
])
def test_load_errors_say_where_and_what(tmp_path, alice_token_hash, text, expected):
    path = tmp_path / "users.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text.format(h=alice_token_hash[1]))
    with pytest.raises(UsersFileError, match=expected) as info:
        load_users(path)
    assert str(path) in str(info.value) and isinstance(info.value, ValueError)


def test_a_missing_file_is_an_error(tmp_path):
    with pytest.raises(UsersFileError, match="cannot read"):
        load_users(tmp_path / "none.toml")
    with pytest.raises(UsersFileError, match="cannot read"):
        UserRegistry.from_file(tmp_path / "none.toml")


# -- the registry ---------------------------------------------------------------------------

def test_single_token_mode():
    registry = UserRegistry.single("s3cret")
    assert registry.mode == "single" and list(registry.users) == [DEFAULT_USER]
    user = registry.authenticate("s3cret")
    assert (user.name, user.weight, user.memory, user.sessions) == (DEFAULT_USER, 1.0, None, None)
    assert registry.get(DEFAULT_USER) is user and registry.get("alice") is None
    for bad in ("s3cre", "s3cret ", "", None, 5, b"s3cret", "default.s3cret"):
        with pytest.raises(AuthenticationError, match="^wrong or missing token$"):
            registry.authenticate(bad)
    assert registry.reload() is None and registry.reload(force=True) is None
    with pytest.raises(ValueError):
        UserRegistry.single("")


def _write(path, **users):
    """Save users given as name=(token, fields) and return the tokens by name."""
    save_users(path, {name: User(name=name, token_hash=hash_token(token), **fields)
                      for name, (token, fields) in users.items()})


def test_authenticate_from_a_file(tmp_path):
    path = tmp_path / "users.toml"
    alice, bob = new_token("alice"), new_token("bob")
    _write(path, alice=(alice, {"weight": 2, "sessions": 4}), bob=(bob, {}))
    registry = UserRegistry.from_file(path)
    assert registry.mode == "file" and sorted(registry.users) == ["alice", "bob"]
    assert registry.authenticate(alice).name == "alice"
    assert registry.authenticate(alice).weight == 2.0
    assert registry.authenticate(bob).name == "bob"
    started = time.perf_counter()
    for _ in range(1000):                                      # remembered: no scrypt any more
        registry.authenticate(alice)
    assert time.perf_counter() - started < 2.0   # (scrypt each time: 1 000 × ≥ 10 ms)
    secret = alice.split(".", 1)[1]
    refused = [f"bob.{secret}", f"carol.{secret}", "alice." + "A" * 43, secret, "", None, 7,
               alice + "x", alice.upper(), "alice." + "A" * 400]
    for bad in refused:                                       # the same text whether or not
        with pytest.raises(AuthenticationError, match="^wrong or missing token$"):   # the user exists
            registry.authenticate(bad)
    registry.users.clear()                                     # a copy
    assert registry.get("alice") is not None


def test_reload_reports_changes_and_forgets_stale_tokens(tmp_path, caplog):
    path = tmp_path / "users.toml"
    alice, bob = new_token("alice"), new_token("bob")
    _write(path, alice=(alice, {}), bob=(bob, {}))
    registry = UserRegistry.from_file(path)
    registry.authenticate(alice)
    registry.authenticate(bob)
    assert registry.reload() is None                           # unchanged
    assert registry.reload(force=True) is None                 # reread, same users

    users = load_users(path)
    carol, alice2 = new_token("carol"), new_token("alice")
    users["carol"] = User(name="carol", token_hash=hash_token(carol))
    users["alice"] = users["alice"].model_copy(update={"token_hash": hash_token(alice2)})
    users["bob"] = users["bob"].model_copy(update={"weight": 3.0, "memory": GIB})
    save_users(path, users)
    assert registry.reload() == Reload(added=frozenset({"carol"}), removed=frozenset(),
                                       changed=frozenset({"alice", "bob"}))
    with pytest.raises(AuthenticationError):
        registry.authenticate(alice)                           # the remembered token is forgotten
    assert registry.authenticate(alice2).name == "alice"
    assert registry.authenticate(bob).memory == GIB             # a quota change keeps the token
    assert registry.authenticate(carol).name == "carol"

    del users["bob"]
    save_users(path, users)
    assert registry.reload() == Reload(frozenset(), frozenset({"bob"}), frozenset())
    with pytest.raises(AuthenticationError):
        registry.authenticate(bob)

    # a file that does not load: a warning (once), and the previous users stay
    path.write_text("[users.alice\n")
    with caplog.at_level(logging.WARNING, logger="gpu_backend.accounting.users"):
        assert registry.reload() is None
        assert registry.reload() is None
    warnings = [r for r in caplog.records if r.name == "gpu_backend.accounting.users"]
    assert len(warnings) == 1 and "not valid TOML" in warnings[0].getMessage()
    assert str(path) in warnings[0].getMessage()
    assert sorted(registry.users) == ["alice", "carol"]
    assert registry.authenticate(alice2).name == "alice"

    caplog.clear()
    path.unlink()                                              # so does a missing file
    with caplog.at_level(logging.WARNING, logger="gpu_backend.accounting.users"):
        assert registry.reload() is None
        assert registry.reload(force=True) is None
    assert len(caplog.records) == 1 and "cannot read" in caplog.records[0].getMessage()
    assert registry.authenticate(carol).name == "carol"

    save_users(path, {"carol": users["carol"]})               # and a good file is read again
    assert registry.reload() == Reload(frozenset(), frozenset({"alice"}), frozenset())


def test_reload_sees_a_same_size_rewrite_at_once(tmp_path):
    """A new token hash keeps the file's size; the rename gives it a new inode, so even a file
    system with a coarse modification time cannot hide the change."""
    path = tmp_path / "users.toml"
    old = new_token("alice")
    _write(path, alice=(old, {}))
    registry = UserRegistry.from_file(path)
    size = path.stat().st_size
    _write(path, alice=(new_token("alice"), {}))
    assert path.stat().st_size == size
    assert registry.reload() == Reload(frozenset(), frozenset(), frozenset({"alice"}))
    with pytest.raises(AuthenticationError):
        registry.authenticate(old)


# -- gpuwb-backend users -------------------------------------------------------------------

def users_cli(path, *args, env_file=False):
    """Run ``python -m gpu_backend.cli users ...`` for real; the file by --file or by the variable."""
    env = {k: v for k, v in os.environ.items() if k != "GPUWB_USERS_FILE"}
    if env_file:
        env["GPUWB_USERS_FILE"] = str(path)
        command = ["users", *args]
    else:
        command = ["users", "--file", str(path), *args] if path is not None else ["users", *args]
    return subprocess.run([sys.executable, "-m", "gpu_backend.cli", *command],
                          capture_output=True, text=True, env=env, timeout=60, check=False)


def test_cli_add_list_set_remove(tmp_path):
    path = tmp_path / "users.toml"
    added = users_cli(path, "add", "alice", "--weight", "2", "--memory", "16GiB", "--sessions", "4",
                      env_file=True)
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    assert added.stdout == token + "\n" and token_user(token) == "alice"
    assert "only" in added.stderr and "once" in added.stderr and token not in added.stderr
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert token.split(".", 1)[1] not in path.read_text()
    registry = UserRegistry.from_file(path)
    alice = registry.authenticate(token)
    assert (alice.weight, alice.memory, alice.sessions) == (2.0, 16 * GIB, 4)

    assert users_cli(path, "add", "bob").returncode == 0
    assert registry.reload().added == {"bob"}

    listed = users_cli(path, "list")
    assert listed.returncode == 0, listed.stderr
    assert "alice" in listed.stdout and "16GiB" in listed.stdout and "—" in listed.stdout
    assert "scrypt" not in listed.stdout
    as_json = users_cli(path, "list", "--json")
    assert json.loads(as_json.stdout) == [
        {"name": "alice", "weight": 2.0, "memory": 16 * GIB, "sessions": 4},
        {"name": "bob", "weight": 1.0, "memory": None, "sessions": None}]

    changed = users_cli(path, "set", "alice", "--memory", "none", "--sessions", "none",
                        "--weight", "0.5", "--new-token")
    assert changed.returncode == 0, changed.stderr
    new = changed.stdout.strip()
    assert token_user(new) == "alice" and new != token
    assert registry.reload() == Reload(frozenset(), frozenset(), frozenset({"alice"}))
    with pytest.raises(AuthenticationError):
        registry.authenticate(token)                           # the old token stops working
    alice = registry.authenticate(new)
    assert (alice.weight, alice.memory, alice.sessions) == (0.5, None, None)

    assert users_cli(path, "set", "alice", "--memory", "1.5G").stdout == ""   # no new token: silent
    assert registry.reload().changed == {"alice"} and registry.get("alice").memory == parse_size("1.5G")

    assert users_cli(path, "remove", "bob").returncode == 0
    assert registry.reload().removed == {"bob"}
    assert sorted(load_users(path)) == ["alice"]


def test_cli_errors_exit_2_without_a_traceback(tmp_path):
    path = tmp_path / "users.toml"
    assert users_cli(path, "add", "alice").returncode == 0
    before = path.read_text()
    failures = [
        (users_cli(path, "add", "alice"), "exists"),
        (users_cli(path, "add", "carol", "--memory", "16 XiB"), "not a size"),
        (users_cli(path, "add", "carol", "--memory", "12K"), "at least 1MiB"),
        (users_cli(path, "set", "zed", "--weight", "2"), "no user 'zed'"),
        (users_cli(path, "set", "alice", "--sessions", "many"), "--sessions"),
        (users_cli(path, "remove", "zed"), "no user 'zed'"),
        (users_cli(None, "list"), "GPUWB_USERS_FILE"),
        (users_cli(tmp_path / "nowhere" / "users.toml", "list"), "cannot read"),
    ]
    for result, message in failures:
        assert result.returncode == 2, (result.stdout, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr
        assert result.stdout == ""
    assert path.read_text() == before                          # nothing was written
    path.write_text("[users.alice\n")
    broken = users_cli(path, "add", "bob")                     # a broken file is not overwritten
    assert broken.returncode == 2 and "line 1" in broken.stderr
    assert path.read_text() == "[users.alice\n"
    helped = users_cli(None, "--help")
    assert helped.returncode == 0 and "rereads the file by itself" in " ".join(helped.stdout.split())
