# A throwaway durable PostgreSQL cluster for the experiment scripts
# (pg-ab.py, pg-rotation-turns.py, pg-partition-time.py): the newest
# server binaries under /usr/lib/postgresql, fsync=on,
# synchronous_commit=on, shared_buffers=256MB, on a Unix socket in WORK
# only. Run as root (the cluster then runs as the postgres user) or as a
# user that may run PostgreSQL.
import os, shutil, subprocess

_root = os.getuid() == 0
_pgbin = sorted(os.path.join('/usr/lib/postgresql', v, 'bin') for v in os.listdir('/usr/lib/postgresql'))[-1]


def as_pg(args, **kw):
    """Runs args as the postgres user when root, else as this user."""
    return subprocess.run((['runuser', '-u', 'postgres', '--'] if _root else []) + args, check=True, **kw)


def start(work, settings=''):
    """Starts the cluster of WORK (initdb'd on first use) with the durable
    settings plus SETTINGS ("-c name=value ..."); returns its data
    directory. Its socket is in WORK: postgres://postgres@/DB?host=WORK."""
    os.makedirs(work, exist_ok=True)
    if _root:
        shutil.chown(work, 'postgres', 'postgres')
    pgdata = os.path.join(work, 'data')
    if not os.path.exists(pgdata):
        as_pg([_pgbin + '/initdb', '-D', pgdata, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-instructions'],
              stdout=subprocess.DEVNULL)
    as_pg([_pgbin + '/pg_ctl', 'start', '-D', pgdata, '-w', '-t', '60', '-l', os.path.join(work, 'pg.log'), '-o',
           "-c listen_addresses='' -k %s -c fsync=on -c synchronous_commit=on -c shared_buffers=256MB %s"
           % (work, settings)], stdout=subprocess.DEVNULL)
    return pgdata


def stop(pgdata):
    """Stops the cluster of the data directory PGDATA (fast)."""
    as_pg([_pgbin + '/pg_ctl', 'stop', '-D', pgdata, '-m', 'fast'], stdout=subprocess.DEVNULL)
