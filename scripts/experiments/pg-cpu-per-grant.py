#!/usr/bin/env python3
# CPU per refresh grant of `oauthd serve` on PostgreSQL, two or more builds
# alternated in the same minutes (docs/PERFORMANCE.md "CPU per grant on
# PostgreSQL").
#
#   scripts/experiments/pg-cpu-per-grant.py PGDATA DBURL SEEDJSON TOKENS C DURATION ROUNDS OAUTHD...
#
# PGDATA is the data directory of a running durable cluster (fsync=on),
# DBURL a database seeded once with
# `oauthd-bench --db DBURL --emit-tokens TOKENS --grants 64 --json >SEEDJSON`
# (TOKENS is rewritten with the newest tokens after every run, so the
# chains go on from run to run and from build to build). Nothing else may
# use the cluster meanwhile (its CPU is counted cluster-wide).
#
# Each round runs every build once, in turn (the order reversed every other
# round): start `OAUTHD --db DBURL --log-level warn serve`, wait for
# /readyz, a 1 s warm-up run, then `oauthd-bench --target` (OAUTHD_BENCH,
# by default oauthd-bench beside the first build, drives the load) with C chains for DURATION; the CPU
# (utime+stime from /proc) of serve and of the cluster (the postmaster's
# own and reaped children's, plus its live children's) over the measured
# run, divided by the grants that succeeded. One JSON line per run, the
# medians and ranges per build at the end.
import json, os, statistics, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proccpu import cluster_cpu, proc_cpu  # noqa: E402
from ready import wait_ready  # noqa: E402

pgdata, dburl, seedjson, tokens, conc, dur, rounds = sys.argv[1:8]
builds = sys.argv[8:]
bench = os.environ.get('OAUTHD_BENCH') or os.path.join(os.path.dirname(os.path.abspath(builds[0])), 'oauthd-bench')
seed = json.load(open(seedjson))
pm = int(open(pgdata + '/postmaster.pid').readline())

port = 18433 + os.getpid() % 1000
target = 'http://127.0.0.1:%d/v2/auth/oauth2/token' % port


def drive(d):
    out = subprocess.run([bench, '--target', target,
                          '--client-id', seed['client_id'], '--client-secret', seed['client_secret'],
                          '--tokens', tokens, '-c', conc, '-d', d, '--json'],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


res = {}
for r in range(int(rounds)):
    order = list(enumerate(builds))
    if r % 2:
        order.reverse()
    for i, b in order:
        srv = subprocess.Popen([b, '--db', dburl, '--log-level', 'warn', 'serve', '--addr', '127.0.0.1:%d' % port],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(port, srv)
            drive('1s')
            c0, p0 = proc_cpu(srv.pid), cluster_cpu(pm)
            o = drive(dur)
            c1, p1 = proc_cpu(srv.pid), cluster_cpu(pm)
        finally:
            srv.terminate()
            srv.wait()
        n = o['ok']
        d = {'round': r, 'build': i, 'serve_us': (c1 - c0) / n * 1e6, 'pg_us': (p1 - p0) / n * 1e6,
             'grants_per_s': o['grants_per_s'], 'p99_ms': o['latency_ms']['p99'], 'errors': o.get('errors'),
             'alive': o.get('chains_alive'), 'load': os.getloadavg()[0]}
        print(json.dumps(d), flush=True)
        res.setdefault(i, []).append(d)
for i, b in enumerate(builds):
    rs = res[i]
    line = {'build': b}
    for k in ('serve_us', 'pg_us', 'grants_per_s'):
        v = [x[k] for x in rs]
        line[k] = '%.0f (%.0f-%.0f)' % (statistics.median(v), min(v), max(v))
    print('median', json.dumps(line))
