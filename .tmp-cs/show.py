import json,sys
for line in sys.stdin:
    line=line.strip()
    if line.startswith('call'): print(line); continue
    if not line.startswith('{'): continue
    d=json.loads(line)
    for name,r in d['scenarios'].items():
        b=r.get('baseline',{}); o=r.get('osloBaseline',{})
        print(f"{name}: tidings {r.get('opsPerSec')} p50 {r.get('p50Ms')} cpu {r.get('cpuUsPerOp')} | raw {b.get('opsPerSec')} p50 {b.get('p50Ms')} cpu {b.get('cpuUsPerOp')} | proto {o.get('opsPerSec')} p50 {o.get('p50Ms')} cpu {o.get('cpuUsPerOp')} | ratio {r.get('ratio')} roundRatio {r.get('roundRatio')}")
