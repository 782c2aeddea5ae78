"""Where a program's held stretches leave the client's fast path (issue 50): a diagnostic.

    python benchmarks/fast_path_misses.py [--programs logistic_regression,mlp_training]
        [--devices auto] [--runs 3] [--quick] [--json out.json]

A replayed stretch is cheap on the client only while its ops are answered from the
template (kernelproxy/template_run.py); a run that falls back, or a stretch whose first
op starts no run, goes op by op through the session's ordinary path (~15-20 µs an op on the
GPU hosts: H100 run 41 found logistic regression's every op there). For each program of
``programs.py`` (its size, ``--runs`` whole runs after one of warm-up, one session on an
embedded pool over the same-host link) this counts, from the client's side:

* the client's stretch figures (``Session.stretches.figures()``: replays, those answered
  from a template, early, let go);
* each fall-back of a run: the template's length, the op it had reached and that op's name;
* each stretch's first op that started no run although some template begins with an op of
  its kind and name (its name), and the templates the client holds (their first ops).

It wraps the client's own methods (``TemplateRun.fall_back``, ``StretchReplay.start_run``)
to count; a diagnostic, not a timing. A table, then JSON.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernelproxy import stretch_replay, template_run  # noqa: E402
from kernelproxy.modules import module_for  # noqa: E402
from json_out import emit  # noqa: E402
from programs import PROGRAMS  # noqa: E402
from served_pool import open_pool, sessions_by_transport, use_side  # noqa: E402


def op_name(record: tuple) -> str:
    """An op's callable's name from its key record (a literal: ``('l', type, name)``)."""
    name = record[2]
    return str(name[2] if type(name) is tuple and len(name) == 3 and name[0] == "l" else name)


class Counts:
    """What the wrapped methods saw, for the program being run."""

    def __init__(self) -> None:
        self.fall_backs: collections.Counter = collections.Counter()
        self.no_run: collections.Counter = collections.Counter()
        #: for a first op that started no run: its array arguments' metadata as the client
        #: has it beside the metadata the template's input had (the first few only)
        self.no_run_metas: list = []


def instrument(counts: Counts) -> None:
    """Count fall-backs and first ops that start no run (the methods keep their results)."""
    fall_back = template_run.TemplateRun.fall_back
    start_run = stretch_replay.StretchReplay.start_run

    def counted_fall_back(run):
        template, at = run.template, run.i
        name = op_name(template.ops[at]) if at < len(template.ops) else "(past its end)"
        counts.fall_backs[(len(template.ops), at, str(name))] += 1
        return fall_back(run)

    def counted_start_run(replay, session, kind, want, out, name, *rest):
        run = start_run(replay, session, kind, want, out, name, *rest)
        templates = replay.templates.starting(kind, name) if type(name) is str else []
        if run is None and templates:
            counts.no_run[str(name)] += 1
            if len(counts.no_run_metas) < 4:
                counts.no_run_metas.append(_arguments_beside(session, templates[0], rest[1]))
        return run

    template_run.TemplateRun.fall_back = counted_fall_back
    stretch_replay.StretchReplay.start_run = counted_start_run


def _arguments_beside(session, template, args) -> list:
    """Each array argument's handle and metadata as the client has it, beside the
    template's inputs' metadata (the first op's roles name which input each is)."""
    roles = template.ops[0][4] if len(template.ops[0]) > 4 else ()
    seen = []
    for value, role in zip(args, roles):
        hid = getattr(value, "_h", None)
        if hid is None or type(role) is not tuple or role[0] != "i":
            continue
        meta = getattr(value, "_m", None)
        mine = meta if meta is not None else session.meta.peek(hid)
        seen.append({"input": role[1], "client": repr(mine),
                     "template": repr(template.input_metas[role[1]])})
    return seen


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", default="logistic_regression,mlp_training,sgd_minibatch")
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="programs.py's small sizes")
    parser.add_argument("--policy", default="share")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    names = [n for n in args.programs.split(",") if n]
    unknown = sorted(set(names) - set(PROGRAMS))
    if unknown:
        parser.error(f"unknown programs: {', '.join(unknown)}")
    counts = Counts()
    instrument(counts)
    out = {"command": " ".join([os.path.basename(sys.executable)] + sys.argv), "programs": {}}
    for name in names:
        fn, full, small, _tol = PROGRAMS[name]
        size = small if args.quick else full
        with open_pool(args.policy, args.devices, False) as pool, \
                sessions_by_transport(pool, "ipc") as sessions:
            session = sessions["ipc"]
            use_side("ipc", session)
            xp = module_for(session)
            fn(xp, size)   # (warm-up: the stretches offered, held, captured)
            counts.fall_backs.clear()
            counts.no_run.clear()
            counts.no_run_metas.clear()
            before = dict(session.stretches.figures())
            for _ in range(args.runs):
                fn(xp, size)
            after = session.stretches.figures()
            templates = [(len(t.ops), op_name(t.ops[0])) for t in session.stretches.templates.held.values()]
        out["programs"][name] = {
            "figures": {k: after[k] - before.get(k, 0) for k in after},
            "fall_backs": [{"template_ops": n, "at_op": at, "op": op, "times": c}
                           for (n, at, op), c in counts.fall_backs.most_common(10)],
            "no_run": dict(counts.no_run.most_common(10)),
            "no_run_metas": list(counts.no_run_metas),
            "templates": templates}
    for name, row in out["programs"].items():
        f = row["figures"]
        print(f"{name}: replays {f['replays']}, from the template {f['fast']}, early {f['early']}, "
              f"let go {f['released']}; templates (ops, first op) {row['templates']}")
        for fb in row["fall_backs"]:
            print(f"  fell back {fb['times']}x at op {fb['at_op']} of {fb['template_ops']} ({fb['op']})")
        for op, c in row["no_run"].items():
            print(f"  first op {op} started no run {c}x")
        for seen in row["no_run_metas"][:2]:
            print(f"    its arrays, client / template: {seen}")
    emit(out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
