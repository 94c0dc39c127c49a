#!/usr/bin/env python3
# ab-inprocess.py BUILDS CS ROUNDS DUR: runs /tmp/i35/bin-B (B in the comma-separated BUILDS, each
# an oauthd-bench build: go build -o bin-B ./cmd/oauthd-bench) as '-c C -d DUR --json' for every C in CS, ROUNDS rounds, the builds
# alternating (order reversed every other round); prints each run and the medians of the ratios to
# the first build (grants/s, and CPU per grant of the whole process). docs/decisions/README.md.
BIN_DIR = __import__('os').environ.get('BIN_DIR', '/tmp/i35')
import subprocess,json,sys,os,statistics,resource,time
builds=sys.argv[1].split(','); cs=[int(x) for x in sys.argv[2].split(',')]; reps=int(sys.argv[3]); dur=sys.argv[4]
out=open(BIN_DIR+'/ab-%s.jsonl'%('-'.join(builds)),'a')
res={}
for r in range(reps):
    for c in cs:
        order=builds if r%2==0 else builds[::-1]
        for b in order:
            env=dict(os.environ); env['TMPDIR']='/var/tmp'
            t0=os.times()
            p=subprocess.run([BIN_DIR+'/bin-'+b,'--log-level','warn','-c',str(c),'-d',dur,'--json'],capture_output=True,text=True,env=env)
            t1=os.times()
            cpu=(t1.children_user-t0.children_user)+(t1.children_system-t0.children_system)
            try: j=json.loads(p.stdout)
            except Exception: print('ERR',b,p.stderr[-300:]); continue
            rec={'b':b,'c':c,'r':r,'gps':j['grants_per_s'],'ok':j['ok'],'err':j['errors'],'alive':j['chains_alive'],'p99':j['latency_ms'].get('p99'),'cpu':cpu,'load':os.getloadavg()[0]}
            out.write(json.dumps(rec)+'\n'); out.flush()
            res.setdefault((b,c),[]).append(rec)
            print(rec,flush=True)
print('--- medians')
for c in cs:
    base=builds[0]
    for b in builds:
        rs=res.get((b,c),[])
        if not rs: continue
        g=statistics.median(x['gps'] for x in rs)
        # CPU per grant includes seeding (same for all builds) and the load generator
        cpg=statistics.median(x['cpu']/max(x['ok'],1)*1e6 for x in rs)
        rb=res.get((base,c),[])
        ratios=[x['gps']/y['gps'] for x,y in zip(rs,rb)]
        print(f"c={c} {b}: grants/s median {g:.0f}, CPU µs/grant (whole process, incl. load and seed) {cpg:.0f}, pairwise ratio to {base} median {statistics.median(ratios):.3f} range {min(ratios):.3f}-{max(ratios):.3f}, errors {sum(x['err'] for x in rs)}")
