#!/usr/bin/env python3
# How long `oauthd store partition-families` takes, and what a running
# server's refresh grants see meanwhile (docs/SCALE.md "Hash-partitioned
# families"): seeds N families (`oauthd-bench --emit-tokens … --grants 64
# --seed N`) into a private durable cluster, starts `oauthd serve` on it,
# and, while `oauthd-bench --target` drives 64 refresh chains, converts
# the table to 16 partitions and back to a plain table, REPS times. Prints
# each conversion's --json and the load's report (its max latency is the
# stall), one JSON line each, and the table's size. LOAD_DURATION (40s)
# must outlast a conversion by a few seconds.
#
#   scripts/experiments/pg-partition-time.py OAUTHD WORKDIR N [REPS]
#
# OAUTHD_BENCH is the load generator (`go build -o oauthd-bench ./cmd/oauthd-bench`),
# by default oauthd-bench beside OAUTHD.
#
# Run as root (the cluster runs as the postgres user) or as a user that
# can run initdb. Loopback and a Unix socket only.
import json, os, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ready import wait_ready  # noqa: E402
import pgcluster  # noqa: E402

oauthd = os.path.abspath(sys.argv[1])
bench = os.environ.get('OAUTHD_BENCH') or os.path.join(os.path.dirname(oauthd), 'oauthd-bench')
work = os.path.abspath(sys.argv[2])
n = int(sys.argv[3])
reps = int(sys.argv[4]) if len(sys.argv) > 4 else 2
pgdata = pgcluster.start(work, '-c max_wal_size=4GB')
admin = 'postgres://postgres@/postgres?host=' + work
db = 'postgres://postgres@/partition_%d?host=%s' % (n, work)


def psql(url, sql):
    return subprocess.run(['psql', url, '-Atc', sql], capture_output=True, text=True, check=True).stdout.strip()


srv = None
try:
    seedf, tokf = os.path.join(work, 'seed-%d.json' % n), os.path.join(work, 'tok-%d' % n)
    if not os.path.exists(seedf):
        psql(admin, 'DROP DATABASE IF EXISTS partition_%d' % n)
        psql(admin, 'CREATE DATABASE partition_%d' % n)
        out = subprocess.run([bench, '--db', db, '--emit-tokens', tokf, '--grants', '64', '--seed', str(n), '--json'],
                             capture_output=True, text=True, check=True).stdout
        open(seedf, 'w').write(out)
    seed = json.load(open(seedf))
    print(json.dumps({'families': int(psql(db, 'SELECT count(*) FROM families')),
                      'families_bytes': int(psql(db, "SELECT pg_total_relation_size('families')"))}), flush=True)
    srv = subprocess.Popen([oauthd, '--db', db, '--log-level', 'warn', 'serve', '--addr', '127.0.0.1:18600'],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(18600, srv)
    for rep in range(reps):
        for parts in (16, 0):
            c = len(open(tokf).read().split())
            load = subprocess.Popen([bench, '--target', 'http://127.0.0.1:18600/v2/auth/oauth2/token',
                                     '--client-id', seed['client_id'], '--client-secret', seed['client_secret'],
                                     '--tokens', tokf, '-c', str(c), '-d', os.environ.get('LOAD_DURATION', '40s'), '--json'],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            time.sleep(3)
            t0 = time.time()
            conv = json.loads(subprocess.run([oauthd, '--db', db, 'store', 'partition-families', '--partitions', str(parts), '--json'],
                                             capture_output=True, text=True, check=True).stdout)
            conv['wall_s'] = round(time.time() - t0, 2)
            conv['families_bytes_after'] = int(psql(db, "SELECT pg_total_relation_size('families')"))
            if parts:
                conv['partition_bytes_after'] = int(psql(db, "SELECT pg_total_relation_size('families_h16_0')"))
            r = json.loads(load.communicate()[0])
            conv['load'] = {k: r[k] for k in ('grants_per_s', 'latency_ms', 'errors', 'by_status', 'chains_alive', 'chains')}
            conv['rep'] = rep
            print(json.dumps(conv), flush=True)
finally:
    if srv:
        srv.terminate()
        srv.wait()
    pgcluster.stop(pgdata)
