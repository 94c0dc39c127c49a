#!/usr/bin/env python3
# Per refresh-token rotation on PostgreSQL (docs/SCALE.md): WAL bytes,
# WAL records and full-page images, rows touched, buffers dirtied (when
# pg_stat_statements is loaded), CPU of oauthd serve and of the cluster.
#
#   scripts/experiments/pg-per-rotation.py OAUTHD PGDATA DBURL SEEDJSON TOKENS C DURATION REPS
#
# PGDATA is the data directory of the (durable) cluster, DBURL a database
# seeded with `oauthd-bench --emit-tokens TOKENS --seed N --json >SEEDJSON`;
# nothing else may use the cluster meanwhile (WAL and CPU are
# cluster-wide). Each rep: start serve (--log-level warn), one CHECKPOINT,
# then `oauthd-bench --target` for DURATION with C chains; deltas are
# divided by the rotations that succeeded. Prints one JSON line per rep
# and the medians.
# OAUTHD_BENCH is the load generator (`go build -o oauthd-bench ./cmd/oauthd-bench`),
# by default oauthd-bench beside OAUTHD.
import json, os, subprocess, sys, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proccpu import cluster_cpu, proc_cpu  # noqa: E402
from ready import wait_ready  # noqa: E402
oauthd, pgdata, dburl, seedjson, tokens, conc, dur, reps = sys.argv[1:9]
bench = os.environ.get('OAUTHD_BENCH') or os.path.join(os.path.dirname(os.path.abspath(oauthd)), 'oauthd-bench')
seed = json.load(open(seedjson))
pm = int(open(pgdata + '/postmaster.pid').readline())

def q(sql):
    return subprocess.run(['psql', dburl, '-Atc', sql], capture_output=True, text=True, check=True).stdout.strip()

def snap():
    s = {}
    s['lsn'] = int(q("SELECT pg_current_wal_lsn() - '0/0'"))
    r = q("SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal").split('|')
    s['wal_records'], s['wal_fpi'], s['wal_bytes'] = int(r[0]), int(r[1]), int(r[2])
    r = q("SELECT n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables WHERE relname='families'").split('|')
    s['fam_ins'], s['fam_upd'], s['fam_hot_upd'], s['fam_del'] = map(int, r)
    r = q("SELECT coalesce(sum(n_tup_ins+n_tup_upd+n_tup_del),0) FROM pg_stat_user_tables")
    s['rows_written_all'] = int(r)
    try:
        r = q("SELECT coalesce(sum(shared_blks_dirtied),0), coalesce(sum(shared_blks_written),0), coalesce(sum(calls),0) FROM pg_stat_statements")
        s['blks_dirtied'], s['blks_written'], s['calls'] = map(int, r.split('|'))
    except subprocess.CalledProcessError:
        pass
    return s

port = 18432
res = []
for rep in range(int(reps)):
    srv = subprocess.Popen([oauthd, '--db', dburl, '--log-level', 'warn', 'serve', '--addr', '127.0.0.1:%d' % port],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(port, srv)
        q('CHECKPOINT')
        s0, c0, p0 = snap(), proc_cpu(srv.pid), cluster_cpu(pm)
        out = subprocess.run([bench, '--target', 'http://127.0.0.1:%d/v2/auth/oauth2/token' % port,
                              '--client-id', seed['client_id'], '--client-secret', seed['client_secret'],
                              '--tokens', tokens, '-c', conc, '-d', dur, '--json'],
                             capture_output=True, text=True, check=True).stdout
        s1, c1, p1 = snap(), proc_cpu(srv.pid), cluster_cpu(pm)
    finally:
        srv.terminate()
        srv.wait()
    b = json.loads(out)
    n = b['ok']
    d = {k: (s1[k] - s0[k]) / n for k in s0}
    d['serve_cpu_us'] = (c1 - c0) / n * 1e6
    d['pg_cpu_us'] = (p1 - p0) / n * 1e6
    d['rotations'] = n
    d['grants_per_s'] = b['grants_per_s']
    d['load'] = os.getloadavg()[0]
    print(json.dumps({k: round(v, 3) for k, v in d.items()}), flush=True)
    res.append(d)
print('median', json.dumps({k: round(statistics.median(r[k] for r in res), 3) for k in res[0]}))
