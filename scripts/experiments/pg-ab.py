#!/usr/bin/env python3
# A/B of oauthd builds on a durable PostgreSQL (docs/decisions/: the family
# cache, the batched rotation statement): the in-process refresh bench of
# scripts/bench-postgres.sh (`BIN --db URL -c C -d DUR --json`, server
# and load generator in one process, one chain per worker), the builds
# alternating, on one cluster it starts itself.
#
#   scripts/experiments/pg-ab.py WORKDIR CS ROUNDS DUR BIN_A BIN_B...
#
# e.g. pg-ab.py /tmp/ab 16,64 6 8s bin-A bin-B: for each round and each
# concurrency in CS every build runs once, in turn, the order reversed every
# other round. Each build is `go build -o BIN ./cmd/oauthd-bench` of a
# tree; A is the first. The cluster: initdb in WORKDIR, fsync=on,
# synchronous_commit=on, shared_buffers=256MB, max_connections=300, on a
# Unix socket only. Each run gets a fresh database, a copy of one that
# `BIN_A store migrate` made (CREATE DATABASE … TEMPLATE, outside the
# measured time), dropped after the run: the run seeds its client and C
# grants into it, then rotates them. (A reused database keeps the seeded
# user's approval limits: seeding failed there.)
# Nothing else may use the cluster meanwhile: its CPU is counted
# cluster-wide (proccpu.cluster_cpu).
#
# Per run (one JSON line): grants/s, p99, errors, chains alive, the CPU of
# the oauthd process (utime+stime, server, load generator and seeding) and
# of the cluster over the run, each per grant that succeeded, and the load
# average. At the end, per concurrency and build: the medians of the ratios
# B ÷ A taken round by round (range), for grants/s, oauthd CPU per grant,
# PostgreSQL CPU per grant and their sum. Run as root (PostgreSQL runs as
# the postgres user) or as a user that can run initdb.
import json, os, signal, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proccpu import cluster_cpu  # noqa: E402
import pgcluster  # noqa: E402

work = os.path.abspath(sys.argv[1])
cs = [int(x) for x in sys.argv[2].split(',')]
rounds = int(sys.argv[3])
dur = sys.argv[4]
bins = [os.path.abspath(b) for b in sys.argv[5:]]
names = [os.path.basename(b) for b in bins]
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop the cluster (finally) on kill
pgdata = pgcluster.start(work, '-c max_connections=300')
try:
    admin = 'postgres://postgres@/postgres?host=' + work
    db = 'postgres://postgres@/oauthd?host=' + work
    tpl = 'postgres://postgres@/oauthd_tpl?host=' + work
    subprocess.run(['psql', admin, '-qc', 'DROP DATABASE IF EXISTS oauthd', '-c', 'DROP DATABASE IF EXISTS oauthd_tpl',
                    '-c', 'CREATE DATABASE oauthd_tpl'], check=True)
    subprocess.run([bins[0], '--db', tpl, '--log-level', 'warn', 'store', 'migrate'], check=True, stdout=subprocess.DEVNULL)
    print(subprocess.run(['psql', admin, '-Atc', 'SHOW fsync', '-c', 'SHOW synchronous_commit'],
                         capture_output=True, text=True).stdout.replace('\n', ' '), '(fsync, synchronous_commit)')
    pm = int(open(os.path.join(pgdata, 'postmaster.pid')).readline())
    res = {}
    for r in range(rounds):
        for c in cs:
            order = list(range(len(bins)))
            if r % 2:
                order.reverse()
            for i in order:
                for _ in range(6):  # a run whose seeding failed goes again (c=64: the approval limit, 60 at once per user and client, stops the seeding of grant 60 when it is fast)
                    subprocess.run(['psql', admin, '-qc', 'CREATE DATABASE oauthd TEMPLATE oauthd_tpl', '-c', 'CHECKPOINT'], check=True)
                    p0 = cluster_cpu(pm)
                    t0 = os.times()
                    p = subprocess.run([bins[i], '--db', db, '--log-level', 'warn', '-c', str(c), '-d', dur, '--json'],
                                       capture_output=True, text=True)
                    t1 = os.times()
                    time.sleep(0.2)  # the ended backends reaped
                    p1 = cluster_cpu(pm)
                    subprocess.run(['psql', admin, '-qc', 'DROP DATABASE oauthd'], check=True)
                    try:
                        j = json.loads(p.stdout)
                        break
                    except ValueError:
                        j = None
                        print('ERR', names[i], p.stderr[-400:], flush=True)
                if j is None:
                    continue
                n = max(j['ok'], 1)
                cpu = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
                d = {'t': time.strftime('%H:%M:%S', time.gmtime()), 'round': r, 'c': c, 'build': names[i],
                     'gps': j['grants_per_s'], 'p99': j['latency_ms'].get('p99'), 'errors': j['errors'],
                     'alive': j['chains_alive'], 'oauthd_us': cpu / n * 1e6, 'pg_us': (p1 - p0) / n * 1e6,
                     'load': os.getloadavg()[0]}
                print(json.dumps(d), flush=True)
                res[(r, c, i)] = d
finally:
    pgcluster.stop(pgdata)


def med(xs):
    return '%.3f (%.3f–%.3f)' % (statistics.median(xs), min(xs), max(xs)) if xs else '-'


print('--- medians of the ratios to %s, round by round (range)' % names[0])
for c in cs:
    for i in range(len(bins)):
        rs = [(res[(r, c, i)], res[(r, c, 0)]) for r in range(rounds) if (r, c, i) in res and (r, c, 0) in res]
        if not rs:
            continue
        g = statistics.median(b['gps'] for b, _ in rs)
        ou = statistics.median(b['oauthd_us'] for b, _ in rs)
        pu = statistics.median(b['pg_us'] for b, _ in rs)
        line = 'c=%d %-12s grants/s %6.0f, µs/grant oauthd %4.0f + PostgreSQL %4.0f' % (c, names[i], g, ou, pu)
        if i:
            line += '; B÷A: grants/s %s, oauthd CPU/grant %s, PostgreSQL CPU/grant %s, sum %s' % (
                med([b['gps'] / a['gps'] for b, a in rs]),
                med([b['oauthd_us'] / a['oauthd_us'] for b, a in rs]),
                med([b['pg_us'] / a['pg_us'] for b, a in rs]),
                med([(b['oauthd_us'] + b['pg_us']) / (a['oauthd_us'] + a['pg_us']) for b, a in rs]))
        errs = sum(b['errors'] for b, _ in rs)
        dead = sum(c - b['alive'] for b, _ in rs)
        print(line + '; errors %d, dead chains %d, load %.1f–%.1f' % (
            errs, dead, min(b['load'] for b, _ in rs), max(b['load'] for b, _ in rs)))
