#!/usr/bin/env python3
# CPU per refresh-token rotation of two builds of data/postgres, alternated
# (docs/PERFORMANCE.md "Replicas taking turns on one family").
#
#   go test -c -o /tmp/pgb-before.test ./data/postgres   # on the old tree (with rotation_bench_test.go)
#   go test -c -o /tmp/pgb-after.test ./data/postgres    # on the new one
#   echo /path/of/a/running/cluster > /tmp/pgb-test-pgdir # its data/ and socket directory
#   scripts/experiments/rotation-cpu.py 5000 5
#
# For each round, mode (same replica, alternating) and build: BenchmarkRotation
# with N=1 and with N rotations; the difference over N-1 is the CPU per rotation
# of the benchmark process (RUSAGE_CHILDREN) and of the cluster (postmaster's
# utime+stime+cutime+cstime plus its live children's). Medians at the end.
import os, subprocess, resource, re, statistics, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proccpu import cluster_cpu  # noqa: E402
pgdir=open('/tmp/pgb-test-pgdir').read().strip()
pm=int(open(pgdir+'/data/postmaster.pid').readline())
env=dict(os.environ, OAUTHD_TEST_POSTGRES="postgres://postgres@/postgres?host="+pgdir)
def run(build, mode, n):
    c0=resource.getrusage(resource.RUSAGE_CHILDREN); p0=cluster_cpu(pm)
    out=subprocess.run(['/tmp/pgb-%s.test'%build,'-test.run','XXX','-test.bench','BenchmarkRotation/%s$'%mode,'-test.benchtime','%dx'%n],env=env,capture_output=True,text=True,cwd='/work/wt/pgbouncer/data/postgres').stdout
    c1=resource.getrusage(resource.RUSAGE_CHILDREN); p1=cluster_cpu(pm)
    m=re.search(r'\s(\d+) ns/op',out)
    return (c1.ru_utime+c1.ru_stime-c0.ru_utime-c0.ru_stime), p1-p0, int(m.group(1)) if m else None
N=int(sys.argv[1]); reps=int(sys.argv[2])
res={}
for r in range(reps):
    for mode in ['same','alternating']:
        for build in ['before','after']:
            c1,p1,_=run(build,mode,1)
            cN,pN,ns=run(build,mode,N)
            res.setdefault((mode,build),[]).append(((cN-c1)/(N-1)*1e6,(pN-p1)/(N-1)*1e6,ns/1000))
    print('rep',r,'load',open('/proc/loadavg').read().split()[0],flush=True)
for k,v in sorted(res.items()):
    print(k, 'client µs CPU/op median %.0f  postgres µs CPU/op median %.0f  µs/op median %.0f'%tuple(statistics.median(x[i] for x in v) for i in range(3)), ' all:',[tuple(round(y) for y in x) for x in v])
