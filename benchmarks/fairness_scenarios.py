"""benchmarks/fairness.py's scenarios: each a list of (user, workload, weight), the users
every pool of a run knows, and what a run without ``--scenarios`` runs (fairness.py's
docstring says what each scenario is)."""

SCENARIOS = {
    "two-1:1": [("a", "big", 1), ("b", "big", 1)],
    "three-1:2:4": [("a", "big", 1), ("b", "big", 2), ("c", "big", 4)],
    "big-vs-small": [("a", "big", 1), ("b", "small", 1)],
    "interactive+1": [("a", "big", 1), ("i", "interactive", 1)],
    "interactive+2": [("a", "big", 1), ("b", "big", 1), ("i", "interactive", 1)],
    "dynamics": [("a", "big", 1), ("b", "big", 1), ("c", "big", 1)],
    # long kernels, which the arbiter cannot preempt (issue 38)
    "interactive+long": [("a", "long", 1), ("i", "interactive", 1)],
    "long-vs-small": [("a", "long", 1), ("b", "small", 1)],
    # DL-like mixed traffic: a training loop that syncs each step, beside long kernels and
    # an interactive user
    "dl-mix": [("a", "train", 1), ("b", "long", 1), ("i", "interactive", 1)],
    # users that sync every few ms (issue 51): nothing queued while each waits for its value
    "sync-1:1": [("a", "sync", 1), ("b", "sync", 1)],
    "sync-1:2:4": [("a", "sync", 1), ("b", "sync", 2), ("c", "sync", 4)],
    "sync-long-vs-small": [("a", "longsync", 1), ("b", "smallsync", 1)],
    "interactive+2048": [("a", "mid", 1), ("i", "interactive", 1)],
    # kinds mixed under weights, and more users at once (issue 51)
    "mixed-1:2:4": [("a", "big", 1), ("b", "train", 2), ("c", "sync", 4)],
    "many-sync": [(user, "sync", 1) for user in ("a", "b", "c", "d", "e", "f")],
    "interactive+syncs": [("a", "sync", 1), ("b", "sync", 1), ("c", "sync", 1),
                          ("i", "interactive", 1)],
    # a lone user (issue 51: within 3 % of its rate under none, under every policy)
    "alone-sync": [("a", "sync", 1)],
    "alone-train": [("a", "train", 1)],
    "alone-2048": [("a", "mid", 1)],
    "alone-interactive": [("i", "interactive", 1)],
    # ... beside a notebook that ran a cell and sits idle, its session open (issue 51: the
    # commonest company a user has; its rate judged as a lone user's)
    "alone-2048+idle": [("a", "mid", 1), ("b", "idle", 1)],
    "alone-sync+idle": [("a", "sync", 1), ("b", "idle", 1)],
}
#: the kinds whose users do no GEMM work: measured by their latency (``interactive``) or not
#: at all (``idle``, a session open and doing nothing); no rate, no part of the work
NOT_WORK = ("interactive", "idle")
#: what a run without --scenarios runs: every scenario (the long-kernel ones were left out,
#: and a default run missed cases the documents quote: issue 53)
DEFAULT_SCENARIOS = list(SCENARIOS)
USERS = ("a", "b", "c", "d", "e", "f", "i", "solo")
