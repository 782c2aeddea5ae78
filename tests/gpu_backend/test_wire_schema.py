"""The wire schema: every key of every message is declared once, in
``gpu_backend/protocol/messages/`` (a module per channel), and the code and docs/protocol.md
keep to it.

- docs/protocol.md's "Messages, field by field" section is ``render_markdown()``'s output.
- Every field of every message class says what it means.
- An AST walk over ``gpu_backend/``, ``kernelproxy/`` and ``workbench/``: a dict literal sent
  (an argument of one of SENDERS), assigned to a name that holds a message, or built in a
  function that builds messages, uses only declared keys; so does every ``m["key"]``,
  ``m.get("key")``, ``"key" in m``, ``m.update(key=…)`` on an expression that holds a
  decoded message; and every message type (``"t"``) written or compared is declared. Which
  names hold messages is said per module (SCOPES), narrowly, so that ordinary dicts are not
  judged: a module not in SCOPES is checked only for dict literals it sends, against the
  keys of all channels.

``python tests/gpu_backend/test_wire_schema.py`` prints, per channel, the declared keys no scanned
code writes or reads (a help for review, not a test).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import typing
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpu_backend.protocol import message_docs as docs
from gpu_backend.protocol import messages as m
from tests.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT
PACKAGES = ("gpu_backend", "kernelproxy", "workbench")

#: Calls whose arguments are messages on their way out (every dict literal inside them).
SENDERS = frozenset({
    "packb",             # codec.packb: every message is packed by it
    "send",              # ControlChannel.send, a link's send, a socket's send
    "_send",             # DeviceLease._send (worker -> arbiter)
    "send_message",      # ClientLinks.send_message (worker -> client)
    "send_multipart",    # ZeroMQ
    "_reply",            # FrontDoor._reply (front door -> client)
    "_send_control",     # WorkerServer._send_control (worker -> front door)
    "tell",              # pool_workers.Worker.tell (front door -> worker)
    "hold",              # HeldRefusals.hold (a throttled sign-in's refusal, sent later)
    "door_request",      # kernelproxy.connection (client -> front door)
    "signed_in_request",
    "_ask",              # workbench.pool_watch.PoolWatcher._ask
})


@dataclass(frozen=True)
class Scope:
    """A module that speaks the protocol: its channels (the keys it may use are theirs),
    the expressions that hold a decoded or outgoing message (as ``_receiver_text`` writes
    them: ``msg``, ``self.device``, ``_facts()``), and the functions every string-keyed
    dict literal of which is (part of) a message."""
    channels: tuple[str, ...]
    receivers: frozenset[str] = frozenset()
    builders: frozenset[str] = frozenset()


def _scope(channels: tuple[str, ...], receivers: str = "", builders: str = "") -> Scope:
    return Scope(channels, frozenset(receivers.split()), frozenset(builders.split()))


FD, PS, SW, WC, AR, DF, ZY, HA = (m.FRONT_DOOR, m.POOL_STATUS, m.SESSION_WORKER, m.WORKER_CONTROL,
                                  m.ARBITER, m.DEVICE_FACTS, m.WORKER_ZYGOTE, m.HOST_AGENT)
AD = m.ADMINISTRATION

SCOPES: dict[str, Scope] = {
    # the pool
    "gpu_backend/door/session_workers.py": _scope((FD, WC, DF), "msg"),
    "gpu_backend/door/frontdoor.py": _scope((FD, PS, WC, DF), "msg reply session.usage "
                                       "worker.session.usage"),
    "gpu_backend/door/client_requests.py": _scope((FD, PS, WC), "msg reply"),
    "gpu_backend/door/session_records.py": _scope((PS, WC), "session.usage", "add"),
    "gpu_backend/door/placement.py": _scope((WC,), "s.usage", ""),
    "gpu_backend/door/pool_status.py": _scope((PS, FD, WC, DF), "s.usage report session.usage",
                                         "build_status _user_rows _accounts"),
    "gpu_backend/hosts/device_samples.py": _scope((PS,), "", "history"),
    "gpu_backend/door/auth_gate.py": _scope((FD,), "", "hold"),
    "gpu_backend/door/swap_broker.py": _scope((WC,), "msg s.usage", ""),
    "gpu_backend/accounting/accounts.py": _scope((WC,), "", "grow"),
    "gpu_backend/accounting/usage.py": _scope((PS,), "", "history"),
    "gpu_backend/door/metrics.py": _scope((PS, FD, DF), "status device d"),
    "gpu_backend/hosts/pool_workers.py": _scope((WC,)),
    "gpu_backend/hosts/zygotes.py": _scope((ZY,), "msg"),
    "gpu_backend/worker/zygote.py": _scope((ZY,), "request"),
    "gpu_backend/arbiter/service.py": _scope((AR,), "msg"),
    "gpu_backend/door/moves.py": _scope((WC, AD), "msg", "drain"),
    "gpu_backend/door/admin.py": _scope((AD,), "msg reply", "_answer"),
    "gpu_backend/door/restarts.py": _scope((AD,), "record raw", "park_all"),
    "gpu_backend/cli_moves.py": _scope((AD,), "reply row r", "_ask"),
    # a pool across hosts
    "gpu_backend/multihost/agent_door.py": _scope((HA,), "msg"),
    "gpu_backend/multihost/remote_host.py": _scope((HA, WC), "msg"),
    "gpu_backend/multihost/host_agent.py": _scope((HA, WC), "msg"),
    "gpu_backend/multihost/across_hosts.py": _scope((PS,), "", "status"),
    # the worker
    "gpu_backend/worker/server.py": _scope((SW, WC), "msg header reply final", "_failure"),
    "gpu_backend/worker/server_sharing.py": _scope((WC,), "msg"),
    "gpu_backend/worker/server_moves.py": _scope((WC,), "msg"),
    "gpu_backend/worker/steady_lane.py": _scope((SW,), "", "reply"),
    "gpu_backend/worker/lane_plans.py": _scope((SW,), "header"),
    "gpu_backend/worker/pushed_replies.py": _scope((SW,)),
    "gpu_backend/worker/executor.py": _scope((SW, WC, DF), "header reply", "usage info"),
    "gpu_backend/worker/staged.py": _scope((SW,), "header"),
    "gpu_backend/worker/wait_notices.py": _scope((SW,)),
    "gpu_backend/worker/unix_listener.py": _scope((SW,), "msg"),
    "gpu_backend/worker/lease.py": _scope((AR,), "msg"),
    "gpu_backend/worker/grants.py": _scope((WC,), "refusal"),
    "gpu_backend/worker/cuda_calls.py": _scope((DF,), "", "run_cuda_call"),
    "gpu_backend/devices/base.py": _scope((DF,), "", "info runtime_facts pool_figures"),
    "gpu_backend/devices/numpy_device.py": _scope((DF,), "", "info"),
    "gpu_backend/devices/cupy_device.py": _scope((DF,), "", "info runtime_facts pool_figures"),
    # the client
    "kernelproxy/connection.py": _scope((FD,), "msg reply"),
    "kernelproxy/session.py": _scope((FD, SW, DF), "info header msg self.device"),
    "kernelproxy/session_replies.py": _scope((SW,), "reply"),
    "kernelproxy/pushed_replies.py": _scope((SW,), "reply"),
    "kernelproxy/wait_displays.py": _scope((SW,), "notice"),
    "kernelproxy/relink.py": _scope((FD, SW), "info"),   # (SW: a streamed upload's chunks sent again)
    "kernelproxy/links.py": _scope((FD, SW), "answer spec hello"),
    "kernelproxy/streamed.py": _scope((SW,), "header"),
    "kernelproxy/cuda.py": _scope((DF,), "_facts() facts figures _pool_figures()"),
    "kernelproxy/modules.py": _scope((DF,), "active_session().runtime"),
    "kernelproxy/core.py": _scope((DF,), "session.runtime"),
    "kernelproxy/functional.py": _scope((DF,), "session.device"),
    "kernelproxy/operators.py": _scope((DF,), "self._s.device"),
    # the glue
    "workbench/cli.py": _scope((FD,)),
    "workbench/pool_watch.py": _scope((FD,), "request reply"),
    "workbench/pool_views.py": _scope((PS, FD, DF), "status d u s info history"),
    "workbench/magics.py": _scope((PS, FD, DF), "status mine info device other _mine()"),
    "workbench/demo.py": _scope((PS, FD), "status s"),
}

#: Dict literals inside a message that are not ours to declare: (module, function, the key
#: under which the dict sits) -> why.
EXEMPT: dict[tuple[str, str, str], str] = {
    ("gpu_backend/devices/base.py", "runtime_facts", "properties"):
        "cudaDeviceProp's field names, as CuPy's getDeviceProperties gives them "
        "(RuntimeFacts.properties is a dict of them)",
}

#: Names that look like messages but are not, so kept out of SCOPES (for the reader: the
#: walk never looks at them).
NOT_MESSAGES: dict[str, str] = {
    "workbench/kernel.py: reply": "Jupyter's execute_reply",
    "workbench/jupyter_extension.py: self.reply(…), view": "the server extension's HTTP JSON",
    "workbench/magics.py: d": "rows of %gpu status's own table (with an 'ordinal')",
    "gpu_backend/door/frontdoor.py: self.published": "the metrics' in-process snapshot",
    "gpu_backend/door/metrics.py: snap": "the same snapshot (its 'status' is a StatusReply's body)",
    "gpu_backend/door/pool_status.py: arbiter_users, seen": "the arbiter policy's in-process snapshot",
    "gpu_backend/arbiter/trace.py: entry": "a line of the decision trace (a file)",
    "kernelproxy/cuda.py: _properties()": "cudaDeviceProp's names (see EXEMPT)",
    "gpu_backend/devices/cupy_device.py: kernel definitions": "a kernel op's target "
        "(a value, checked against its own allow-list of keys there)",
}


# ------------------------------------------------------------------ the schema's own facts

def _all_classes() -> list[type]:
    return [cls for classes in m.MESSAGES.values() for cls in classes]


def _keys(channels: typing.Iterable[str]) -> set[str]:
    return {name for channel in channels for cls in m.MESSAGES[channel] for name in m.fields_of(cls)}


def _types(channels: typing.Iterable[str]) -> set[str]:
    """The message types (``t``'s literal values) of *channels*."""
    found = set()
    for channel in channels:
        for cls in m.MESSAGES[channel]:
            field = m.fields_of(cls).get("t")
            if field is not None and typing.get_origin(field[0]) is typing.Literal:
                found.update(typing.get_args(field[0]))
    return found


def test_docs_section_is_render_markdown() -> None:
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    assert text.count(docs.MARK_BEGIN) == 1 and text.count(docs.MARK_END) == 1
    section = text.split(docs.MARK_BEGIN, 1)[1].split(docs.MARK_END, 1)[0]
    assert section == f"\n{docs.render_markdown()}\n", \
        "docs/protocol.md is stale: python -m gpu_backend.protocol --write docs/protocol.md"


def test_every_message_and_field_is_explained() -> None:
    classes = _all_classes()
    assert len(classes) == len(set(classes)), "a class is registered twice"
    for name in m.__all__:
        assert hasattr(m, name), name
    for cls in classes:
        assert cls.__name__ in m.__all__, cls.__name__
        assert typing.is_typeddict(cls), cls.__name__
        assert (cls.__doc__ or "").strip(), f"{cls.__name__} has no docstring"
        fields = m.fields_of(cls)
        assert fields, cls.__name__
        for name, (_tp, meaning, _required) in fields.items():
            assert meaning.strip(), f"{cls.__name__}.{name} says nothing of what it means"
            assert "\n" not in meaning, f"{cls.__name__}.{name}: a meaning is one line"
    # every TypedDict of the module is registered
    defined = {v for v in vars(m).values() if isinstance(v, type) and typing.is_typeddict(v)}
    assert defined == set(classes), defined ^ set(classes)


def test_messages_module_stands_alone() -> None:
    """Loaded from its folder alone (not through its package, which imports the codec): no
    third-party module comes with it, nor any of ``gpu_backend``."""
    folder = ROOT / "gpu_backend" / "protocol" / "messages"
    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('wire_messages', "
            f"{str(folder / '__init__.py')!r}, submodule_search_locations=[{str(folder)!r}])\n"
            "module = importlib.util.module_from_spec(spec)\n"
            "sys.modules['wire_messages'] = module\n"
            "spec.loader.exec_module(module)\n"
            "assert all(module.fields_of(c) for cs in module.MESSAGES.values() for c in cs)\n"
            "third = {'numpy', 'zmq', 'msgpack', 'pydantic', 'gpu_backend'} & set(sys.modules)\n"
            "assert not third, third\n")
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------ the walk over the code

def _receiver_text(node: ast.AST) -> str:
    """``msg``, ``self.device``, ``_facts()`` (a call's arguments left out)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_receiver_text(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return f"{_receiver_text(node.func)}()"
    return ast.unparse(node)


def _const_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


@dataclass
class Use:
    module: str
    line: int
    key: str
    how: str   # "sent", "read", "type"


class Walker(ast.NodeVisitor):
    """Collects the keys a module writes into messages and reads out of them."""

    def __init__(self, module: str, scope: Scope | None) -> None:
        self.module = module
        self.scope = scope
        self.receivers = scope.receivers if scope else frozenset()
        self.builders = scope.builders if scope else frozenset()
        self.function = ""
        self.uses: list[Use] = []
        self.seen_receivers: set[str] = set()
        self.seen_builders: set[str] = set()
        self.sending_dicts = 0
        self._done: set[int] = set()   # dicts already taken
        self._kinds: set[str] = set()  # names assigned a message's "t"

    # -- which expressions hold a message
    def holds_message(self, node: ast.AST) -> bool:
        text = _receiver_text(node)
        if text in self.receivers:
            self.seen_receivers.add(text)
            return True
        if isinstance(node, ast.Subscript) and _const_str(node.slice) is not None:
            return self.holds_message(node.value)   # a map inside a message
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "get" and node.args and _const_str(node.args[0]) is not None:
            return self.holds_message(node.func.value)
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            return self.holds_message(node.values[0])   # ``msg.get("x") or {}``
        return False

    def is_type_of_message(self, node: ast.AST) -> bool:
        """``msg.get("t")``, ``msg["t"]``, or a name assigned one."""
        if isinstance(node, ast.Name):
            return node.id in self._kinds
        if isinstance(node, ast.Subscript) and _const_str(node.slice) == "t":
            return self.holds_message(node.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "get" and node.args and _const_str(node.args[0]) == "t":
            return self.holds_message(node.func.value)
        return False

    # -- message dict literals
    def take_dict(self, node: ast.AST) -> None:
        """Every dict literal within *node* is (part of) a message."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Dict) and id(sub) not in self._done:
                self._done.add(id(sub))
                keys = [_const_str(k) if k is not None else "**" for k in sub.keys]
                if not keys or None in keys:
                    continue   # {} or keys that are not string constants: not a message map
                for key, value in zip(keys, sub.values):
                    if key == "**":
                        continue
                    if (self.module, self.function, key) in EXEMPT:
                        self._done.update(id(d) for d in ast.walk(value) if isinstance(d, ast.Dict))
                        continue
                    self.uses.append(Use(self.module, sub.lineno, key, "sent"))
                    kind = _const_str(value)
                    if key == "t" and kind is not None:
                        self.uses.append(Use(self.module, sub.lineno, kind, "type"))

    # -- the visit
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        outer, self.function = self.function, node.name
        if node.name in self.builders:
            self.seen_builders.add(node.name)
            self.take_dict(node)
        self.generic_visit(node)
        self.function = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        name = _call_name(node)
        if name in SENDERS:
            before = len(self.uses)
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                self.take_dict(arg)
            self.sending_dicts += len(self.uses) > before
        func = node.func
        if isinstance(func, ast.Attribute) and self.holds_message(func.value):
            if func.attr in ("get", "pop", "setdefault") and node.args:
                key = _const_str(node.args[0])
                if key is not None:
                    self.uses.append(Use(self.module, node.lineno, key, "read"))
            elif func.attr == "update":
                for keyword in node.keywords:
                    if keyword.arg is not None:
                        self.uses.append(Use(self.module, node.lineno, keyword.arg, "sent"))
                for arg in node.args:
                    self.take_dict(arg)
        if isinstance(func, ast.Attribute) and func.attr == "get" and isinstance(func.value, ast.Dict) \
                and node.args and self.is_type_of_message(node.args[0]):
            for key in func.value.keys:   # a dispatch table by message type
                if _const_str(key) is not None:
                    self.uses.append(Use(self.module, node.lineno, _const_str(key), "type"))
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._assigned(node.targets, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._assigned([node.target], node.value)
        self.generic_visit(node)

    def _assigned(self, targets: list[ast.AST], value: ast.AST) -> None:
        for target in targets:
            if isinstance(value, ast.Dict) and _receiver_text(target) in self.receivers:
                self.seen_receivers.add(_receiver_text(target))
                self.take_dict(value)
            if isinstance(target, ast.Name) and self.is_type_of_message(value):
                self._kinds.add(target.id)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        key = _const_str(node.slice)
        if key is not None and self.holds_message(node.value):
            how = "read" if isinstance(node.ctx, ast.Load) else "sent"
            self.uses.append(Use(self.module, node.lineno, key, how))
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)) and _const_str(left) is not None \
                    and self.holds_message(right):
                self.uses.append(Use(self.module, node.lineno, _const_str(left), "read"))
            if isinstance(op, (ast.Eq, ast.NotEq)) and self.is_type_of_message(left) \
                    and _const_str(right) is not None:
                self.uses.append(Use(self.module, node.lineno, _const_str(right), "type"))
            left = right
        self.generic_visit(node)


def _sources() -> dict[str, Path]:
    return {path.relative_to(ROOT).as_posix(): path
            for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def walk(module: str, text: str | None = None) -> Walker:
    """The uses of *module* (its text, or the file's)."""
    source = text if text is not None else (ROOT / module).read_text(encoding="utf-8")
    walker = Walker(module, SCOPES.get(module))
    walker.visit(ast.parse(source, module))
    return walker


def undeclared(walker: Walker) -> list[str]:
    """The uses of keys or message types that no class of the module's channels declares."""
    channels = walker.scope.channels if walker.scope else tuple(m.MESSAGES)
    keys, kinds = _keys(channels), _types(channels)
    return [f"{u.module}:{u.line}: {'message type' if u.how == 'type' else 'key'} {u.key!r} "
            f"({u.how}) is not declared in the messages package's {', '.join(channels)} classes"
            for u in walker.uses
            if (u.how == "type" and u.key not in kinds) or (u.how != "type" and u.key not in keys)]


WALKS = {module: walk(module) for module in _sources()}


@pytest.mark.parametrize("module", sorted(WALKS))
def test_code_uses_only_declared_keys(module: str) -> None:
    assert undeclared(WALKS[module]) == []


def test_every_sender_module_is_scoped() -> None:
    """A module that sends message literals says which channels it speaks (SCOPES)."""
    loose = [name for name, w in WALKS.items() if w.sending_dicts and name not in SCOPES]
    assert loose == []


def test_scopes_name_what_is_there() -> None:
    """Each scope's receivers and builders occur in its module: a renamed variable or
    function would otherwise quietly drop out of the check."""
    for module, scope in SCOPES.items():
        assert module in WALKS, f"{module} no longer exists"
        walker = WALKS[module]
        assert scope.receivers <= walker.seen_receivers, (module, scope.receivers - walker.seen_receivers)
        assert scope.builders <= walker.seen_builders, (module, scope.builders - walker.seen_builders)
        assert walker.uses, f"{module} uses no message keys: is it still in scope?"
    for (module, _function, _key) in EXEMPT:
        assert module in SCOPES
    for entry in NOT_MESSAGES:
        assert (ROOT / entry.partition(":")[0]).is_file(), entry


def test_the_walk_catches_an_undeclared_key() -> None:
    """The check itself: a key added to a sent literal, to an assigned message, or read from
    a message, and an unknown message type, each fail."""
    server = (ROOT / "gpu_backend/worker/server.py").read_text(encoding="utf-8")
    sharing = (ROOT / "gpu_backend/worker/server_sharing.py").read_text(encoding="utf-8")
    cases = [
        ("gpu_backend/worker/server_sharing.py",
         sharing.replace('{"t": "grow", "want": want}', '{"t": "grow", "want": want, "wants_more": 1}', 1),
         "'wants_more'"),
        ("gpu_backend/worker/server_sharing.py",
         sharing.replace('msg.get("t") == "granted"', 'msg.get("t") == "granted_later"', 1),
         "'granted_later'"),
        ("gpu_backend/worker/server.py",
         server.replace('"memory": 0,', '"memory": 0, "leftover": 0,', 1), "'leftover'"),
        ("kernelproxy/session_replies.py",
         (ROOT / "kernelproxy/session_replies.py").read_text(encoding="utf-8")
         .replace('reply.get("z")', 'reply.get("zz")', 1), "'zz'"),
        ("kernelproxy/streamed.py",
         (ROOT / "kernelproxy/streamed.py").read_text(encoding="utf-8")
         .replace("header.update(s=slot,", "header.update(slot=slot, s=slot,", 1), "'slot'"),
    ]
    for module, text, key in cases:
        assert text != (ROOT / module).read_text(encoding="utf-8"), f"the case for {key} no longer applies"
        problems = undeclared(walk(module, text))
        assert any(key in p for p in problems), (key, problems)


# ------------------------------------------------------------------ a help for review

def unused_keys() -> dict[str, dict[str, set[str]]]:
    """Per channel, declared keys that no scanned code writes, and those it never reads."""
    sent: dict[str, set[str]] = {c: set() for c in m.MESSAGES}
    read: dict[str, set[str]] = {c: set() for c in m.MESSAGES}
    for walker in WALKS.values():
        channels = walker.scope.channels if walker.scope else tuple(m.MESSAGES)
        for use in walker.uses:
            for channel in channels:
                if use.how == "sent":
                    sent[channel].add(use.key)
                elif use.how == "read":
                    read[channel].add(use.key)
    return {c: {"never written": _keys([c]) - sent[c], "never read": _keys([c]) - read[c]}
            for c in m.MESSAGES}


if __name__ == "__main__":
    for channel, found in unused_keys().items():
        for what, keys in found.items():
            if keys:
                print(f"{channel}: {what}: {', '.join(sorted(keys))}")
