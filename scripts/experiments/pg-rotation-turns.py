#!/usr/bin/env python3
# Two replicas taking turns on one refresh-token family, builds alternating
# (docs/decisions/family-cache.md): data/postgres's BenchmarkRotation
# ("same": one store rotates one family; "alternating": two stores, two
# replicas, take turns on it) from each build's test binary, against a
# durable cluster this script starts (fsync=on, synchronous_commit=on, Unix
# socket only, named by OAUTHD_TEST_POSTGRES: each benchmark makes its own
# database).
#
#   go test -c -o A.test ./data/postgres     # and B.test on the other tree
#   scripts/experiments/pg-rotation-turns.py WORKDIR ROUNDS N A.test B.test...
#
# Per round, mode and build (the order reversed every other round): the
# benchmark with 1 rotation and with N; the difference over N-1 is the CPU
# per rotation of the benchmark process (both stores; RUSAGE_CHILDREN) and
# of the cluster (proccpu.cluster_cpu), without the set-up; ns/op is the
# N run's. At the end, per mode and build, the medians of the pairwise
# ratios to the first build (range). Run as root (PostgreSQL runs as the
# postgres user) or as a user that can run initdb.
import json, os, re, resource, signal, statistics, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proccpu import cluster_cpu  # noqa: E402
import pgcluster  # noqa: E402

work = os.path.abspath(sys.argv[1])
rounds, n = int(sys.argv[2]), int(sys.argv[3])
bins = [os.path.abspath(b) for b in sys.argv[4:]]
names = [os.path.basename(b) for b in bins]
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
pgdata = pgcluster.start(work, '-c max_connections=300')
env = dict(os.environ, OAUTHD_TEST_POSTGRES='postgres://postgres@/postgres?host=' + work)
res = {}
try:
    pm = int(open(os.path.join(pgdata, 'postmaster.pid')).readline())

    def run(b, mode, k):
        c0, p0 = resource.getrusage(resource.RUSAGE_CHILDREN), cluster_cpu(pm)
        out = subprocess.run([b, '-test.run', '^$', '-test.bench', '^BenchmarkRotation/%s$' % mode, '-test.benchtime', '%dx' % k],
                             env=env, capture_output=True, text=True).stdout
        c1, p1 = resource.getrusage(resource.RUSAGE_CHILDREN), cluster_cpu(pm)
        m = re.search(r'\s(\d+) ns/op', out)
        if not m:
            raise SystemExit('no result from %s: %s' % (b, out[-400:]))
        return c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime, p1 - p0, int(m.group(1))

    for r in range(rounds):
        for mode in ('same', 'alternating'):
            order = list(range(len(bins)))
            if r % 2:
                order.reverse()
            for i in order:
                c1, p1, _ = run(bins[i], mode, 1)
                cn, pn, ns = run(bins[i], mode, n)
                d = {'round': r, 'mode': mode, 'build': names[i], 'client_us': (cn - c1) / (n - 1) * 1e6,
                     'pg_us': (pn - p1) / (n - 1) * 1e6, 'us_per_op': ns / 1e3, 'load': os.getloadavg()[0]}
                print(json.dumps(d), flush=True)
                res[(r, mode, i)] = d
finally:
    pgcluster.stop(pgdata)


def med(xs):
    return '%.3f (%.3f–%.3f)' % (statistics.median(xs), min(xs), max(xs))


print('--- medians of the ratios to %s, round by round (range)' % names[0])
for mode in ('same', 'alternating'):
    for i in range(len(bins)):
        rs = [(res[(r, mode, i)], res[(r, mode, 0)]) for r in range(rounds) if (r, mode, i) in res and (r, mode, 0) in res]
        line = '%-11s %-16s µs/op %5.0f, CPU µs/rotation client %4.0f + PostgreSQL %4.0f' % (
            mode, names[i], statistics.median(b['us_per_op'] for b, _ in rs),
            statistics.median(b['client_us'] for b, _ in rs), statistics.median(b['pg_us'] for b, _ in rs))
        if i:
            line += '; B÷A: µs/op %s, client CPU %s, PostgreSQL CPU %s, sum %s' % (
                med([b['us_per_op'] / a['us_per_op'] for b, a in rs]), med([b['client_us'] / a['client_us'] for b, a in rs]),
                med([b['pg_us'] / a['pg_us'] for b, a in rs]),
                med([(b['client_us'] + b['pg_us']) / (a['client_us'] + a['pg_us']) for b, a in rs]))
        print(line + '; load %.1f–%.1f' % (min(b['load'] for b, _ in rs), max(b['load'] for b, _ in rs)))
