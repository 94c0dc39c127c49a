#!/usr/bin/env python3
# Replicas and pool sizes on one PostgreSQL database (docs/SCALE.md
# "Replicas and pool sizes, measured"): 1, 2 and 3 `oauthd serve` replicas,
# straight to PostgreSQL (oauthd's pool: pool_max_conns=4, or its default)
# and through PgBouncer in transaction mode (default_pool_size 4, 8, 16,
# 32), the same 64 refresh chains split over the replicas (six
# `oauthd-bench --target` processes of ~11 chains each, assigned to the replicas
# in turn). Per run: grants/s, p99, and pg_stat_activity sampled every
# 50 ms: the server connections busy (state 'active'), the mean of which
# over grants/s is the time a grant holds a server connection (Little's
# law). Every other run is the reference (1 replica, direct, default
# pool); each run's ratio is against the mean of the references just
# before and after it.
#
#   scripts/experiments/pg-replicas.py OAUTHD WORKDIR [REPS [DURATION]]
#
# Starts its own durable cluster (fsync=on, synchronous_commit=on,
# shared_buffers=256MB, max_connections=300) on a Unix socket in WORKDIR,
# and PgBouncer there (scripts/pgbouncer.sh); run as root (the servers run
# as the postgres user) or as a user that can run initdb. Seeds one
# database with `oauthd-bench --emit-tokens … --grants 64`. Prints one JSON
# line per run, then the table (medians over the reps). Loopback only.
# OAUTHD_BENCH is the load generator (`go build -o oauthd-bench ./cmd/oauthd-bench`),
# by default oauthd-bench beside OAUTHD.
import json, os, shutil, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ready import wait_ready  # noqa: E402

oauthd = os.path.abspath(sys.argv[1])
bench = os.environ.get('OAUTHD_BENCH') or os.path.join(os.path.dirname(oauthd), 'oauthd-bench')
work = os.path.abspath(sys.argv[2])
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
dur = sys.argv[4] if len(sys.argv) > 4 else '6s'
here = os.path.dirname(os.path.abspath(__file__))
pgbouncer_sh = os.path.join(here, '..', 'pgbouncer.sh')
root = os.getuid() == 0
pgbin = sorted(d for d in (os.path.join('/usr/lib/postgresql', v, 'bin') for v in os.listdir('/usr/lib/postgresql')))[-1]


def as_pg(args, **kw):
    return subprocess.run((['runuser', '-u', 'postgres', '--'] if root else []) + args, check=True, **kw)


os.makedirs(work, exist_ok=True)
if root:
    shutil.chown(work, 'postgres', 'postgres')
pgdata, sock, pbdir = os.path.join(work, 'data'), work, os.path.join(work, 'pgbouncer')
if not os.path.exists(pgdata):
    as_pg([pgbin + '/initdb', '-D', pgdata, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-instructions'], stdout=subprocess.DEVNULL)
as_pg([pgbin + '/pg_ctl', 'start', '-D', pgdata, '-w', '-t', '60', '-l', os.path.join(work, 'pg.log'), '-o',
       "-c listen_addresses='' -k %s -c fsync=on -c synchronous_commit=on -c shared_buffers=256MB -c max_connections=300" % sock],
      stdout=subprocess.DEVNULL)
direct_base = 'postgres://postgres@/%s?host=' + sock
admin = direct_base % 'postgres'


def psql(url, sql):
    return subprocess.run(['psql', url, '-Atc', sql], capture_output=True, text=True, check=True).stdout.strip()


pool_now = [None]


def pgbouncer(size):
    if pool_now[0] == size:
        return
    subprocess.run([pgbouncer_sh, 'stop', pbdir], check=True)
    env = dict(os.environ, PGBOUNCER_POOL_SIZE=str(size))
    out = subprocess.run([pgbouncer_sh, 'start', pbdir, sock], check=True, capture_output=True, text=True, env=env).stdout.strip()
    pool_now[0] = size
    return out


procs = []
try:
    db = direct_base % 'replicas'
    tokdir = os.path.join(work, 'tokens')
    if not os.path.exists(os.path.join(work, 'seed.json')):
        psql(admin, 'DROP DATABASE IF EXISTS replicas')
        psql(admin, 'CREATE DATABASE replicas')
        seed = subprocess.run([bench, '--db', db, '--emit-tokens', os.path.join(work, 'all.tok'), '--grants', '64', '--json'],
                              capture_output=True, text=True, check=True).stdout
        open(os.path.join(work, 'seed.json'), 'w').write(seed)
        toks = open(os.path.join(work, 'all.tok')).read().split()
        os.makedirs(tokdir, exist_ok=True)
        for i in range(6):
            open(os.path.join(tokdir, '%d.tok' % i), 'w').write('\n'.join(toks[i::6]) + '\n')
    seed = json.load(open(os.path.join(work, 'seed.json')))

    def sample_cmd(n):
        q = ("SELECT count(*) FILTER (WHERE state = 'active'), count(*) FILTER (WHERE state = 'active' AND wait_event LIKE 'WAL%'), count(*) "
             "FROM pg_stat_activity WHERE datname = 'replicas' AND backend_type = 'client backend';")
        return ''.join(q + 'SELECT pg_sleep(0.05);\n' for _ in range(n))

    def run(name, replicas, route, pool):
        url = db
        extra = []
        if route == 'direct' and pool != 'default':
            url = db + '&pool_max_conns=%d' % pool
        if route == 'direct-exec':
            url = db + '&default_query_exec_mode=exec'
        if route == 'pgbouncer':
            pb = pgbouncer(pool) or pb_url[0]
            pb_url[0] = pb
            url = pb.replace('/postgres?', '/replicas?')
            extra = ['--db-session-url', db]
        servers = []
        for r in range(replicas):
            p = subprocess.Popen([oauthd, '--db', url, '--log-level', 'warn', 'serve', '--addr', '127.0.0.1:%d' % (18500 + r)] + extra,
                                 stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, 'serve%d.log' % r), 'w'))
            servers.append(p)
            procs.append(p)
        for r in range(replicas):
            wait_ready(18500 + r, servers[r], os.path.join(work, 'serve%d.log' % r))
        secs = float(dur.rstrip('s'))
        sampler = subprocess.Popen(['psql', admin, '-At', '-F', ' '], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        benches = []
        for i in range(6):
            f = os.path.join(tokdir, '%d.tok' % i)
            c = len(open(f).read().split())
            benches.append(subprocess.Popen([bench, '--target', 'http://127.0.0.1:%d/v2/auth/oauth2/token' % (18500 + i % replicas),
                                             '--client-id', seed['client_id'], '--client-secret', seed['client_secret'],
                                             '--tokens', f, '-c', str(c), '-d', dur, '--json'],
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
        time.sleep(1)  # the loads' connections and chains start
        out, _ = sampler.communicate(sample_cmd(int((secs - 1.5) / 0.06)))
        reports = [json.loads(b.communicate()[0]) for b in benches]
        for p in servers:
            p.terminate()
        for p in servers:
            p.wait()
            procs.remove(p)
        samples = [tuple(map(int, line.split())) for line in out.splitlines() if line.count(' ') == 2]
        gps = sum(r['grants_per_s'] for r in reports)
        active = statistics.mean(s[0] for s in samples)
        d = {'name': name, 'replicas': replicas, 'route': route, 'pool': pool, 'grants_per_s': round(gps, 1),
             'p99_ms': max(r['latency_ms']['p99'] for r in reports), 'p50_ms': statistics.median(r['latency_ms']['p50'] for r in reports),
             'errors': sum(r['errors'] for r in reports), 'busy_mean': round(active, 2), 'busy_max': max(s[0] for s in samples),
             'busy_wal_mean': round(statistics.mean(s[1] for s in samples), 2), 'server_conns_max': max(s[2] for s in samples),
             'hold_ms': round(active / gps * 1000, 3) if gps else None, 'samples': len(samples), 'load': os.getloadavg()[0]}
        print(json.dumps(d), flush=True)
        return d

    pb_url = [None]
    configs = [('direct R=%d pool=%s' % (r, p), r, 'direct', p) for r in (1, 2, 3) for p in (4, 'default') if (r, p) != (1, 'default')]
    configs.append(('direct exec-mode R=1 pool=default', 1, 'direct-exec', 'default'))
    configs += [('pgbouncer R=%d pool=%d' % (r, p), r, 'pgbouncer', p) for p in (4, 8, 16, 32) for r in (1, 2, 3)]
    ref = ('reference', 1, 'direct', 'default')
    runs = []
    for rep in range(reps):
        order = configs if rep % 2 == 0 else configs[::-1]
        seq = [ref]
        for i in range(0, len(order), 2):
            seq += order[i:i + 2] + [ref]
        for c in seq:
            d = run(*c)
            d['rep'] = rep
            runs.append(d)
    # Ratios against the references around each run.
    for i, d in enumerate(runs):
        if d['name'] == 'reference':
            continue
        before = next(r for r in reversed(runs[:i]) if r['name'] == 'reference')
        after = next(r for r in runs[i:] if r['name'] == 'reference')
        d['ratio'] = d['grants_per_s'] / statistics.mean([before['grants_per_s'], after['grants_per_s']])
        d['p99_ratio'] = d['p99_ms'] / statistics.mean([before['p99_ms'], after['p99_ms']])
    print('| configuration | grants/s ÷ reference | p99 ÷ reference | grants/s | p99 ms | busy server connections (mean, max) | open server connections | hold ms (busy ÷ rate) | errors |')
    print('|---|---|---|---|---|---|---|---|---|')
    for name in ['reference'] + [c[0] for c in configs]:
        rs = [d for d in runs if d['name'] == name]
        med = lambda k: statistics.median(d[k] for d in rs)
        ratio = '1' if name == 'reference' else '%.2f' % med('ratio')
        p99r = '1' if name == 'reference' else '%.2f' % med('p99_ratio')
        print('| %s | %s | %s | %.0f | %.1f | %.1f, %d | %d | %.2f | %d |' % (
            name, ratio, p99r, med('grants_per_s'), med('p99_ms'), med('busy_mean'), max(d['busy_max'] for d in rs),
            max(d['server_conns_max'] for d in rs), med('hold_ms'), sum(d['errors'] for d in rs)))
finally:
    for p in procs:
        p.terminate()
    subprocess.run([pgbouncer_sh, 'stop', pbdir])
    as_pg([pgbin + '/pg_ctl', 'stop', '-D', pgdata, '-m', 'fast'], stdout=subprocess.DEVNULL)
