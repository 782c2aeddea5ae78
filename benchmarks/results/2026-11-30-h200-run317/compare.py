"""Run 317's proxy outcomes against the latest earlier outcome of each test through the proxy
(runs 4-22, 2026-11-23, every file of benchmarks/results/*cupy-suite*.json): a test that
passed then and does not now is listed, with its message.

    python benchmarks/results/2026-11-30-h200-run317/compare.py
"""
import glob
import gzip
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.dirname(HERE)
with gzip.open(os.path.join(HERE, "cupy-suite.json.gz"), "rt") as f:
    now = json.load(f)["outcomes"]["proxy"]
runs = []
for path in glob.glob(os.path.join(RESULTS, "2026-11-2*-cupy-suite-*.json")):
    with open(path) as f:
        data = json.load(f)
    if "proxy" in data.get("outcomes", {}):
        runs.append((data.get("date", ""), data["outcomes"]["proxy"]))
before = {}
for _date, outcomes in sorted(runs, key=lambda r: r[0]):
    before.update(outcomes)
compared = [k for k in now if k in before]
lost = [(k, now[k]) for k in compared if before[k][0] == "passed" and now[k][0] != "passed"]
gained = [k for k in compared if before[k][0] != "passed" and now[k][0] == "passed"]
print(f"{len(compared)} tests compared, {len(lost)} passed before and not now, {len(gained)} the other way")
for k, v in lost:
    print(f"  {k}: {v[0]}: {v[1] if len(v) > 1 else ''}")
