#!/usr/bin/env python3
# The partitioned families table against the plain one on one commit
# (docs/decisions/partitioned-families.md), on a private durable cluster
# (fsync=on, synchronous_commit=on) under WORKDIR:
#
#   pg-partition-ab.py OAUTHD WORKDIR setup N          two databases, plain and part16 (16 hash
#                                                      partitions, made on the empty schema), each
#                                                      seeded with N families (bench --emit-tokens
#                                                      --grants 64 --seed N), then VACUUM ANALYZE
#   pg-partition-ab.py OAUTHD WORKDIR rotation ROUNDS DUR [CS]
#                                                      in-process refresh load (bench -c C -d DUR
#                                                      --json) on each database, alternating (the
#                                                      order reversed every other round), C in CS
#                                                      (default 16,64); CPU per grant = the bench
#                                                      process's + every cluster process's
#   pg-partition-ab.py OAUTHD WORKDIR sweep N RUNS     RUNS × both shapes, alternating: a fresh
#                                                      database seeded with N families of which half
#                                                      expire (--expire-share 0.5: bench times one
#                                                      sweep, then an idle one), then
#                                                      VACUUM (VERBOSE) families timed (per partition
#                                                      from its INFO lines)
#   pg-partition-ab.py OAUTHD WORKDIR sweepload N RUNS the sweep under refresh load: a fresh database
#                                                      of N families (no expiry), the codes'
#                                                      tombstones swept first, half the seeded
#                                                      families set to expire, VACUUM; then an
#                                                      in-process bench -c 16 -d 12s and, 2 s into
#                                                      its load, the store's own sweep statement
#                                                      (read from data/postgres/gc.go) run as if two
#                                                      hours later; prints the sweep's time and the
#                                                      load's p99/max and its rate in the sweep's
#                                                      seconds
#   pg-partition-ab.py OAUTHD WORKDIR stop
#
# OAUTHD is the load generator (go build -o oauthd-bench ./cmd/oauthd-bench).
# Every run prints one JSON line (with the 1-minute load average); the
# rotation and sweep commands end with the medians of the pairwise
# part16 ÷ plain ratios and their ranges. Run as root (the cluster runs as
# the postgres user) or as a user that can run initdb. Unix socket only.
import json, os, re, shutil, statistics, subprocess, sys, time

oauthd = os.path.abspath(sys.argv[1])
work = os.path.abspath(sys.argv[2])
cmd = sys.argv[3]
args = sys.argv[4:]
root = os.getuid() == 0
pgbin = sorted(os.path.join('/usr/lib/postgresql', v, 'bin') for v in os.listdir('/usr/lib/postgresql'))[-1]
pgdata = os.path.join(work, 'data')
admin = 'postgres://postgres@/postgres?host=' + work
repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HZ = os.sysconf('SC_CLK_TCK')
SHAPES = {'plain': 0, 'part16': 16}
out = open(os.path.join(work, 'results.jsonl'), 'a') if os.path.isdir(work) else None


def as_pg(a, **kw):
    return subprocess.run((['runuser', '-u', 'postgres', '--'] if root else []) + a, check=True, **kw)


def url(db):
    return 'postgres://postgres@/%s?host=%s' % (db, work)


def psql(u, sql):
    return subprocess.run(['psql', u, '-v', 'ON_ERROR_STOP=1', '-Atc', sql], capture_output=True, text=True, check=True)


def start():
    global out
    os.makedirs(work, exist_ok=True)
    if root:
        shutil.chown(work, 'postgres', 'postgres')
    if not os.path.exists(pgdata):
        as_pg([pgbin + '/initdb', '-D', pgdata, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-instructions'], stdout=subprocess.DEVNULL)
    if subprocess.run((['runuser', '-u', 'postgres', '--'] if root else []) + [pgbin + '/pg_ctl', 'status', '-D', pgdata],
                      stdout=subprocess.DEVNULL).returncode != 0:
        as_pg([pgbin + '/pg_ctl', 'start', '-D', pgdata, '-w', '-t', '60', '-l', os.path.join(work, 'pg.log'), '-o',
               "-c listen_addresses='' -k %s -c fsync=on -c synchronous_commit=on -c shared_buffers=256MB -c max_wal_size=4GB -c max_connections=300" % work],
              stdout=subprocess.DEVNULL)
    if out is None:
        out = open(os.path.join(work, 'results.jsonl'), 'a')


def pgcpu():
    """CPU seconds of every process of the cluster (ended backends are in
    the postmaster's children's times)."""
    pm = open(os.path.join(pgdata, 'postmaster.pid')).readline().strip()
    f = open('/proc/%s/stat' % pm).read().rsplit(')', 1)[1].split()
    s = sum(int(x) for x in f[11:15])
    for p in open('/proc/%s/task/%s/children' % (pm, pm)).read().split():
        try:
            g = open('/proc/%s/stat' % p).read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        s += int(g[11]) + int(g[12])
    return s / HZ


def run(a):
    r = subprocess.run(a, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('%s: exit %d: %s' % (' '.join(a), r.returncode, r.stderr[-1000:]))
    return r.stdout


def emit(db, n, grants, share=0.0):
    """A fresh database db of the shape SHAPES[db's shape], seeded."""
    shape = db.split('_')[0]
    psql(admin, 'DROP DATABASE IF EXISTS %s' % db)
    psql(admin, 'CREATE DATABASE %s' % db)
    run([oauthd, '--db', url(db), 'store', 'migrate'])
    if SHAPES[shape]:
        run([oauthd, '--db', url(db), 'store', 'partition-families', '--partitions', str(SHAPES[shape]), '--json'])
    a = [oauthd, '--db', url(db), '--emit-tokens', os.path.join(work, 'tok-' + db), '--grants', str(grants), '--seed', str(n), '--json']
    if share:
        a += ['--expire-share', str(share)]
    return json.loads(run(a))


def record(rec):
    rec['load'] = os.getloadavg()[0]
    rec['utc'] = time.strftime('%H:%M:%S', time.gmtime())
    line = json.dumps(rec)
    print(line, flush=True)
    out.write(line + '\n')
    out.flush()


def ratios(rs, key, c=None):
    """part16 ÷ plain of key, pair by pair (the two shapes' runs of one
    round)."""
    pairs = {}
    for r in rs:
        if c is None or r.get('c') == c:
            pairs.setdefault(r.get('round', r.get('i')), {})[r['shape']] = r[key]
    a = [p['plain'] for p in pairs.values() if len(p) == 2]
    b = [p['part16'] for p in pairs.values() if len(p) == 2]
    xs = [y / x for x, y in zip(a, b) if x]
    if not xs:
        return 'n/a'
    return '%.3f (%.3f–%.3f, %d pairs); medians plain %.4g, part16 %.4g' % (
        statistics.median(xs), min(xs), max(xs), len(xs), statistics.median(a), statistics.median(b))


def sizes(db):
    return int(psql(url(db), "SELECT pg_total_relation_size('families') + coalesce((SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits WHERE inhparent = 'families'::regclass), 0)").stdout)


def timed_sql(db, sql):
    """Runs sql through psql with \\timing: the server's time of its last
    statement in seconds, psql's stdout and stderr."""
    r = subprocess.run(['psql', url(db), '-v', 'ON_ERROR_STOP=1', '-At'], input='\\timing on\n' + sql + '\n',
                       capture_output=True, text=True, check=True)
    return float(re.findall(r'^Time: ([0-9.]+) ms', r.stdout, re.M)[-1]) / 1000, r.stdout, r.stderr


def vacuum(db):
    """VACUUM (VERBOSE) families: its time, and each heap's (every
    partition's; the TOAST tables left out) elapsed time from its INFO
    lines (0.01 s resolution)."""
    took, _, err = timed_sql(db, 'VACUUM (VERBOSE) families;')
    parts = [float(t) for name, t in re.findall(r'finished vacuuming "([^"]+)".*?elapsed: ([0-9.]+) s', err, re.S) if 'pg_toast' not in name]
    return took, parts


def bench_run(db, c, dur):
    """bench -c c -d dur --json on db: exit code, stdout, stderr and the
    bench process's CPU seconds. Until the load starts (its first progress
    line), the throttle table is emptied every 50 ms: the measured builds
    seeded c grants of one new user and client, and the approval budget
    (60 at once per user and client, issuer/approvals.go) refused the 61st
    when that took under a few seconds (oauthd-bench now seeds 50 grants a
    user; the emptying is kept so the figures reproduce on those builds)."""
    import threading
    p = subprocess.Popen([oauthd, '--db', url(db), '--log-level', 'warn', '-c', str(c), '-d', dur, '--json'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, TMPDIR='/var/tmp'))
    started = threading.Event()
    q = subprocess.Popen(['psql', url(db), '-q'], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)

    def reset():
        while not started.wait(0.05):
            q.stdin.write('DELETE FROM throttle;\n')
            q.stdin.flush()
        q.stdin.close()
        q.wait()
    th = threading.Thread(target=reset)
    th.start()
    err = []
    for ln in p.stderr:
        err.append(ln)
        if ln.startswith('bench:'):
            started.set()
    started.set()
    th.join()
    stdout = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, stdout, ''.join(err), ru.ru_utime + ru.ru_stime


if cmd == 'setup':
    start()
    n = int(args[0])
    for db in SHAPES:
        t0 = time.time()
        e = emit(db, n, 64)
        psql(url(db), 'VACUUM ANALYZE')
        psql(url(db), 'CHECKPOINT')
        record({'setup': db, 'families': int(psql(url(db), 'SELECT count(*) FROM families').stdout),
                'families_bytes': sizes(db), 'seed_s': e['seed']['seconds'], 'wall_s': round(time.time() - t0, 1)})
elif cmd == 'rotation':
    start()
    rounds, dur = int(args[0]), args[1]
    cs = [int(x) for x in (args[2] if len(args) > 2 else '16,64').split(',')]
    rs = []
    for rnd in range(rounds):
        for c in cs:
            order = list(SHAPES) if rnd % 2 == 0 else list(SHAPES)[::-1]
            for db in order:
                p0 = pgcpu()
                code, stdout, stderr, cpu = bench_run(db, c, dur)
                time.sleep(0.2)
                pg = pgcpu() - p0
                try:
                    j = json.loads(stdout)
                except ValueError:
                    print('ERR', db, c, code, stderr[-400:], flush=True)
                    continue
                ok = max(j['ok'], 1)
                rec = {'run': 'rotation', 'shape': db, 'c': c, 'round': rnd, 'gps': j['grants_per_s'], 'ok': j['ok'], 'errors': j['errors'],
                       'alive': j['chains_alive'], 'p99_ms': j['latency_ms'].get('p99'), 'oauthd_us': cpu / ok * 1e6, 'pg_us': pg / ok * 1e6}
                rec['cpu_us'] = rec['oauthd_us'] + rec['pg_us']
                rs.append(rec)
                record(rec)
    for c in cs:
        for k in ('gps', 'cpu_us', 'oauthd_us', 'pg_us', 'p99_ms'):
            print('c=%d %s part16÷plain: %s' % (c, k, ratios(rs, k, c)))
    print('errors %d, dead chains %d' % (sum(r['errors'] for r in rs), sum(r['c'] - r['alive'] for r in rs)))
elif cmd == 'sweep':
    start()
    n, runs = int(args[0]), int(args[1])
    rs = []
    for i in range(runs):
        order = list(SHAPES) if i % 2 == 0 else list(SHAPES)[::-1]
        for shape in order:
            db = shape + '_sweep'
            e = emit(db, n, 16, 0.5)
            before = sizes(db)
            psql(url(db), 'CHECKPOINT')
            wall, parts = vacuum(db)
            rec = {'run': 'sweep', 'shape': shape, 'i': i, 'families_seeded': n, 'gc_families': e['seed']['gc_families'],
                   'gc_auth_codes': e['seed']['gc_auth_codes'], 'gc_s': e['seed']['gc_seconds'], 'gc_idle_s': e['seed']['gc_idle_seconds'],
                   'vacuum_s': wall, 'vacuum_parts_s': parts, 'vacuum_max_part_s': max(parts) if parts else wall,
                   'families_bytes': before}
            rs.append(rec)
            record(rec)
            psql(admin, 'DROP DATABASE %s' % db)
    for k in ('gc_s', 'gc_idle_s', 'vacuum_s', 'vacuum_max_part_s'):
        print('%s part16÷plain: %s' % (k, ratios(rs, k)))
elif cmd == 'sweepload':
    start()
    n, runs = int(args[0]), int(args[1])
    gc_sql = re.search(r'const gc = `(.*?)`', open(os.path.join(repo, 'data/postgres/gc.go')).read(), re.S).group(1)
    rs = []
    for i in range(runs):
        order = list(SHAPES) if i % 2 == 0 else list(SHAPES)[::-1]
        for shape in order:
            db = shape + '_sweepload'
            emit(db, n, 16)
            now = time.time_ns()
            keep = 6 * 3600 * 10**9  # data.RevocationKeep

            def sweep(at):
                took, stdout, _ = timed_sql(db, 'PREPARE g(bigint, bigint) AS %s;\nEXECUTE g(%d, %d);' % (gc_sql, at, at - keep))
                return took, [ln for ln in stdout.splitlines() if '|' in ln][-1]
            sweep(now + 10 * 60 * 10**9)  # the codes' tombstones (expired a minute after seeding)
            exp = now + 3600 * 10**9
            psql(url(db), 'UPDATE families SET expires_ns = %d, gc_ns = %d WHERE user_id >= %d AND user_id %% 2 = 0' % (exp, exp, 1 << 40))
            psql(url(db), 'VACUUM ANALYZE families')
            psql(url(db), 'CHECKPOINT')
            load = subprocess.Popen([oauthd, '--db', url(db), '--log-level', 'warn', '-c', '16', '-d', '12s', '--json'],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, TMPDIR='/var/tmp'))
            lines = []
            while True:  # the progress lines: wait for 2 s of load
                ln = load.stderr.readline()
                if not ln:
                    break
                lines.append((time.time(), ln))
                m = re.match(r'bench:\s+([0-9.]+)s', ln)
                if m and float(m.group(1)) >= 2:
                    break
            ts = time.time()
            took, counts = sweep(now + 2 * 3600 * 10**9)
            te = time.time()
            rest, err = load.communicate()
            for ln in err.splitlines():
                lines.append((None, ln))
            j = json.loads(rest)
            # the rate of the progress seconds that overlap the sweep
            prog = [(float(m.group(1)), int(m.group(2))) for _, ln in lines
                    for m in [re.match(r'bench:\s+([0-9.]+)s\s+ok (\d+)', ln)] if m]
            t_start = [t for t, ln in lines if t is not None and re.match(r'bench:\s+([0-9.]+)s', ln)]
            during = None
            if t_start and prog:
                base_t = t_start[-1] - prog[len(t_start) - 1][0]  # wall time of bench's 0 s
                a, b = ts - base_t, te - base_t
                pts = [(0.0, 0)] + prog
                lo = max([p for p in pts if p[0] <= a] or [pts[0]])
                hi = min([p for p in pts if p[0] >= b] or [pts[-1]])
                if hi[0] > lo[0]:
                    during = (hi[1] - lo[1]) / (hi[0] - lo[0])
            rec = {'run': 'sweepload', 'shape': shape, 'i': i, 'gc_counts': counts, 'gc_s': took, 'load_gps': j['grants_per_s'],
                   'gps_during_sweep': during, 'p99_ms': j['latency_ms'].get('p99'), 'max_ms': j['latency_ms'].get('max'),
                   'errors': j['errors'], 'alive': j['chains_alive']}
            rs.append(rec)
            record(rec)
            psql(admin, 'DROP DATABASE %s' % db)
    for k in ('gc_s', 'p99_ms', 'max_ms', 'gps_during_sweep', 'load_gps'):
        print('%s part16÷plain: %s' % (k, ratios([r for r in rs if r.get(k) is not None], k)))
elif cmd == 'stop':
    as_pg([pgbin + '/pg_ctl', 'stop', '-D', pgdata, '-m', 'fast'], stdout=subprocess.DEVNULL)
else:
    sys.exit('unknown command %s' % cmd)
