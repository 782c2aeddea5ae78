import json, statistics as st, sys
from collections import defaultdict
path=sys.argv[1]
E=[json.loads(l) for l in open(path)]
# split scenarios by set of users
sess_user={}
for e in E:
    if e['session']: sess_user[e['session']]=e['user']
# group sessions by scenario: sessions seen with user 'c' means 1:2:4
by=defaultdict(list)
for e in E:
    by[e['session']].append(e)
def stats(xs):
    xs=sorted(xs); 
    if not xs: return '-'
    return f"n={len(xs)} mean={st.mean(xs)*1e3:.3f} p50={xs[len(xs)//2]*1e3:.3f} p90={xs[int(len(xs)*.9)]*1e3:.3f} max={xs[-1]*1e3:.3f} ms"
for sid, es in by.items():
    if not sid: continue
    u=es[0]['user']
    t0,t1=es[0]['t'],es[-1]['t']
    kinds=defaultdict(int)
    for e in es: kinds[e['msg']['t']+('h' if e['msg'].get('h') else '')]+=1
    tails=[];aheads=[];gaps=[];gaps_idle=[]
    last_idle=None; last_ahead=None; last_out=None
    yields=0; grants=0
    for e in es:
        m=e['msg']; t=e['t']
        for a in e['actions']:
            if a['session']==sid: 
                if a['a']=='yield': yields+=1
                if a['a']=='grant': grants+=1
        if m['t']=='idle':
            last_idle=t; last_ahead=m.get('ahead'); 
            if last_ahead: aheads.append(last_ahead)
            last_out = t if not last_ahead else None
        elif m['t']=='done':
            if last_idle is not None: tails.append(t-last_idle)
            last_out=t
        elif m['t']=='want' and m.get('h'):
            if last_out is not None: gaps.append(t-last_out)
            if last_idle is not None: gaps_idle.append(t-last_idle)
            last_out=None; last_idle=None
    print(u, sid[:6], f"{t1-t0:.1f}s", dict(kinds), 'yields',yields,'grants',grants)
    print('   ahead  ', stats(aheads)); print('   tail(idle->done)', stats(tails)); print('   gap(done->want)', stats(gaps)); print('   idle->want', stats(gaps_idle))
# yields from other sessions' decisions
ys=defaultdict(int)
for e in E:
    for a in e['actions']:
        ys[(sess_user.get(a['session']),a['session'][:6],a['a'],e['msg']['t'])]+=1
for k,v in sorted(ys.items(), key=lambda kv: str(kv[0])): print(k,v)
