import json, sys, collections
def analyse(path):
    rows=[json.loads(l) for l in open(path)]
    # the sync-1:2:4 window: from the first entry naming user c to the last
    idx=[i for i,r in enumerate(rows) if r.get('user')=='c']
    lo, hi = idx[0], idx[-1]
    rows=rows[lo:hi+1]
    w={'a':1,'b':2,'c':4}
    gain=collections.defaultdict(lambda: collections.defaultdict(float))
    counts=collections.defaultdict(collections.Counter)
    yields=collections.Counter()
    ahead_rel=collections.defaultdict(list); ahead_idle=collections.defaultdict(list)
    prev={}
    sid_user={}
    for r in rows:
        vt=r.get('vt',{})
        u=r.get('user'); m=r.get('msg',{}); t=m.get('t') if isinstance(m,dict) else None
        if u: sid_user[r['session']]=u
        for user,v in vt.items():
            if user in prev and user in w:
                d=(v-prev[user])*w[user]
                if d:
                    key = t if user==u else f'other:{t}'
                    gain[user][key]+=d
            prev[user]=v
        if u in w and t:
            counts[u][t]+=1
            if t=='release': ahead_rel[u].append(m.get('ahead') or 0)
            if t=='idle': ahead_idle[u].append(m.get('ahead') or 0)
        for a in r.get('actions',[]):
            if a.get('a')=='yield':
                yields[sid_user.get(a['session'],'?')]+=1
    span=rows[-1]['t']-rows[0]['t']
    print(path, 'span', round(span,2))
    for u in 'abc':
        tot=sum(gain[u].values())
        print(' ', u, 'charged', round(tot,3), {k: round(v,3) for k,v in sorted(gain[u].items(), key=lambda kv:-abs(kv[1]))[:6]},
              dict(counts[u]), 'yields', yields[u],
              'rel ahead med', round(sorted(ahead_rel[u])[len(ahead_rel[u])//2]*1e3,2) if ahead_rel[u] else '-',
              'idle ahead med', round(sorted(ahead_idle[u])[len(ahead_idle[u])//2]*1e3,2) if ahead_idle[u] else '-')
for p in sys.argv[1:]:
    analyse(p)
