# CPU time from /proc, shared by the experiment scripts (pg-cpu-per-grant.py,
# pg-per-rotation.py, pg-rotation-turns.py): a process's utime+stime, and a
# PostgreSQL cluster's (the postmaster's own and its reaped children's, plus
# its live children's), in seconds.
import os

TCK = os.sysconf('SC_CLK_TCK')


def stat(pid):
    """The fields of /proc/PID/stat after the command's ')'."""
    return open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()


def proc_cpu(pid):
    f = stat(pid)
    return (int(f[11]) + int(f[12])) / TCK


def cluster_cpu(postmaster):
    f = stat(postmaster)
    t = sum(int(x) for x in f[11:15])  # utime, stime, cutime, cstime
    for p in os.listdir('/proc'):
        if not p.isdigit():
            continue
        try:
            g = stat(int(p))
        except OSError:
            continue
        if int(g[1]) == postmaster:
            t += int(g[11]) + int(g[12])
    return t / TCK
