"""benchmarks/fairness.py's policies: a policy as it names one (``share+nap250``,
``fair:5``, ``fair/10+nogap``), read as the pool's policy, the workers' settings and the
pool's own arguments, in one place (a variant read by hand, suffix by suffix in a fixed
order, took ``share+nap500+sharelead2000``'s nap for "500+sharelead2000", and a typo ran
the default unnoticed).
"""

from __future__ import annotations

import re

__all__ = ["policy_variant"]

#: Variants of a policy named by a suffix, each one setting of the pool's workers (their
#: environment): "fair+nogap" the gap rule off, "share+fill" the gap fill on, ...
#: {suffix: (variable, value)}
_FLAGS = {
    # a holder hands the device over after its batch's closing read and its reply, as before
    # issue 51 (the gap rule then applies)
    "lateread": ("GPUWB_RELEASE_AT_READ", "0"),
    # a user held back never let into an anticipated user's expected gap (the default,
    # named; runs 34-35 ran while the fill was briefly the default) / let in
    "nofill": ("GPUWB_SHARE_FILL", "0"),
    "fill": ("GPUWB_SHARE_FILL", "1"),
    "split": ("GPUWB_SPLIT_PIECE_US", "1000"),     # long ops cut into 1 ms pieces
    "nogap": ("GPUWB_GAP_RULE", "0"),              # nobody kept the device between batches
    # a preempting newcomer always waits the patience, whatever the holder's ops
    "fixedpatience": ("GPUWB_PATIENCE_BY_OP", "0"),
    # share: a standing grant given back with work running counted off the device at the
    # worker's estimate of that work, as before run 90 (no ``done`` after it)
    "nodone": ("GPUWB_RELEASE_DONE", "0"),
    # replays run ahead only with no lease or alone on the device, not beside others under a
    # standing grant, as before run 95
    "aheadalone": ("GPUWB_RUN_AHEAD_BESIDE", "0"),
    # the steady lane off (worker/steady_lane.py): every replay served by the generic path
    "nolane": ("GPUWB_STEADY_LANE", "0"),
    # no reply pushed before its message comes (worker/pushed_replies.py), as before run 132
    "nopush": ("GPUWB_PUSH", "0"),
    # a device-bound step read before the next is launched (worker/lane_overlap.py), as
    # before run 267
    "nooverlap": ("GPUWB_OVERLAP_STEPS", "0"),
    # share: beside others a held stretch's replay charged its own cost, not its span
    # (worker/replay_prices.py) / charged its span, scaled by the arbiter
    "priced": ("GPUWB_SHARE_PRICED", "1"),
    "unpriced": ("GPUWB_SHARE_PRICED", "0"),
    # a replay re-run paced beside others replied as one whose graphs did not serve (the
    # client drops the stretch as stale after three), as before run 323
    "pacedstale": ("GPUWB_PACED_KEEPS_HELD", "0"),
    # a silent session's part of the device assumed before its report (arbiter/share.py,
    # _assume_silent; the pool's share_assume_silent, the default since run 330) / never
    # assumed: a long op holds the users ahead of it back till its report, as before
    "silent": ("GPUWB_SHARE_ASSUME_SILENT", "1"),
    "nosilent": ("GPUWB_SHARE_ASSUME_SILENT", "0"),
    # share: a session whose company is light users only launches its long replays whole
    # (arbiter/service.py, LIGHT_COMPANY; the pool's share_light_company, the default since
    # run 338) / paced beside any company, as before
    "lightcompany": ("GPUWB_SHARE_LIGHT_COMPANY", "1"),
    # share: a replay beside weighing company paced only where its work is more than the
    # session's lead (its deep lead for the heaviest users: worker/stretch_replay.py)
    "pacebylead": ("GPUWB_PACE_BY_LEAD", "1"),
    # share: beside weighing company a replay whose session's next message is waiting
    # already (a loop that queues deep) is never paced; one that waits for its reads is
    "unpacedbacklog": ("GPUWB_UNPACED_BACKLOG", "1"),
    "nolightcompany": ("GPUWB_SHARE_LIGHT_COMPANY", "0"),
    # share: a session that keeps its work backlogged, beside company that all does too,
    # launches its long replays whose next message waits whole (arbiter/service.py,
    # DEEP_COMPANY; the pool's share_deep_company) / paced beside any weighing company, as
    # before
    "deepcompany": ("GPUWB_SHARE_DEEP_COMPANY", "1"),
    "nodeepcompany": ("GPUWB_SHARE_DEEP_COMPANY", "0"),
}
#: Variants with a number: "fair+patience0" (ms a preempting newcomer waits at most for the
#: holder's drain), "share+pacedreplay4000" (µs of device time from which a replay beside
#: others is re-run op by op, paced), "share+nap250" (µs a free-running session's hold-back
#: sleeps at most; "share+nap0": as long as its estimate says, as before run 39),
#: "share+grain4000" (µs of device time a free-running session launches between two markers),
#: "share+sharelead1000" (µs a free-running session's lead), "fair+lead600" (µs the
#: workers' LEAD); "share+window2" (the share window, ms: the pool's own argument);
#: "share+deeplead16" (ms the heaviest users' sessions launch ahead: the pool's own argument;
#: "share+deeplead0": every session at the workers' own lead, as before run 83);
#: "share+lightgap4" (ms: users whose gaps average at least this hold nobody back for the
#: first 2 ms of a batch, SharePolicy._light: the pool's own argument, 4 by default since
#: run 87; "share+lightgap0": no user is light, as before); "share+gapcharge2" (ms: a user
#: back from a gap of at most this is charged the gap as its own time, SharePolicy._charge_gap:
#: the pool's own argument; "share+gapcharge0": none is); "share+forget50" (ms the device goes
#: unused before a user's return starts every user level, SharePolicy._forget_if_idle: the
#: pool's own argument; "share+forget0": never, as before run 223); "share+companyidle1000"
#: (ms a session with no work stays company while its worker is silent: the pool's own
#: argument; "share+companyidle0": every session attached is company, as before run 336);
#: "share+anticipate32" (ms: users whose batches average at most this, and their gaps 1 ms,
#: are waited for in their gaps: the pool's own argument, 8 by default)
_VALUED = {
    "patience": "GPUWB_PREEMPT_PATIENCE_MS",
    "pacedreplay": "GPUWB_UNPACED_REPLAY_US",
    "nap": "GPUWB_SHARE_NAP_US",
    "grain": "GPUWB_SHARE_GRAIN_US",
    "sharelead": "GPUWB_SHARE_LEAD_US",
    "lead": "GPUWB_PACING_LEAD_US",
}
#: Variants with a number that are the pool's own arguments: {name: serve's option}, passed
#: in this order whatever the name's
_POOL_VALUED = {
    "window": "--share-window-ms",
    "deeplead": "--share-deep-lead-ms",
    "lightgap": "--share-light-gap-ms",
    "gapcharge": "--share-gap-charge-ms",
    "forget": "--share-forget-idle-ms",
    "companyidle": "--company-idle-ms",
    "anticipate": "--share-anticipate-batch-ms",
}
_VALUE = re.compile(r"([a-z]+)(\d+(?:\.\d+)?)")


def policy_variant(name: str) -> tuple[str, str, dict, list]:
    """A policy as fairness.py names it, ``policy[:quantum|/period][+variant...]``: (the
    pool's policy, a tag for file names, the workers' environment, the pool's own
    arguments). "fair:5": every turn 5 ms, period 0, as before turns were shared out of a
    period; "fair/10": turns shared out of a 10 ms period; "fair" alone has the pool's
    defaults (several compare in one run); the variants are _FLAGS and _VALUED, in any
    order. An unknown variant is a ValueError (a typo would run the default unnoticed)."""
    base, *variants = name.split("+")
    policy, _, period = base.partition("/")
    policy, _, quantum = policy.partition(":")
    env, pooled, tags = {}, {}, []
    for variant in variants:
        valued = _VALUE.fullmatch(variant)
        if variant in _FLAGS:
            variable, value = _FLAGS[variant]
            env[variable] = value
        elif valued and valued.group(1) in _VALUED:
            env[_VALUED[valued.group(1)]] = valued.group(2)
        elif valued and valued.group(1) in _POOL_VALUED:
            pooled[valued.group(1)] = valued.group(2)
        else:
            raise ValueError(f"policy {name!r}: no variant {variant!r} (flags "
                             f"{', '.join(_FLAGS)}; with a number "
                             f"{', '.join([*_VALUED, *_POOL_VALUED])})")
        tags.append(variant)
    tag = "-".join([policy] + ([f"q{quantum}"] if quantum else [])
                   + ([f"p{period}"] if period else []) + tags)
    args = ((["--quantum-ms", quantum, "--period-ms", "0"] if quantum else [])
            + (["--period-ms", period] if period else [])
            + [arg for key, option in _POOL_VALUED.items() if key in pooled
               for arg in (option, pooled[key])])
    return policy, tag, env, args
