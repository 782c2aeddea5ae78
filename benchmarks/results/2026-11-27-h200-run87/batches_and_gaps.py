"""Each session's batches (want -> idle) and gaps (idle or done -> want) in an arbiter trace
of run 87, medians, and the fraction of its batches that were short (<= 4 ms) after a long
gap (>= 4 ms): who share's light-user rule (share_light_gap_ms 4, LIGHT_BATCH 4 ms) can
have taken for light.   python3 batches_and_gaps.py share-lightgap4-arbiter.jsonl.gz"""
import gzip, json, statistics as st, sys

rows = [json.loads(line) for line in gzip.open(sys.argv[1], "rt")]
by = {}
for r in rows:
    m = r.get("msg", {})
    t = m.get("t") if isinstance(m, dict) else None
    if r.get("session") and t in ("want", "idle", "done"):
        by.setdefault((r["session"], r.get("user")), []).append((r["t"], t))
for (sid, user), events in by.items():
    batches, gaps, back, out = [], [], None, None
    for t, kind in events:
        if kind == "want":
            if out is not None:
                gaps.append(t - out)
                out = None
            back = t
        elif kind == "idle" and back is not None:
            batches.append(t - back)
            back, out = None, t
        elif kind == "done" and out is not None:
            out = t
    if batches:
        light = sum(1 for b, g in zip(batches[1:], gaps) if b <= 0.004 and g >= 0.004) / max(1, len(gaps))
        print(user, sid[:6], "batches", len(batches), "median %.2f ms" % (st.median(batches) * 1e3),
              "gaps median %.2f ms" % (st.median(gaps) * 1e3) if gaps else "-", "short after long %.2f" % light)
