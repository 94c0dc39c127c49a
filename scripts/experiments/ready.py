# Waiting for a started `oauthd serve`, shared by the experiment scripts
# (pg-cpu-per-grant.py, pg-per-rotation.py, pg-partition-time.py,
# pg-replicas.py).
import time
import urllib.request


def wait_ready(port, proc=None, log=None):
    """Polls http://127.0.0.1:PORT/readyz for up to 30 s; stops the script
    if proc (the server's Popen) exits first, with its log file's text."""
    for _ in range(3000):
        try:
            urllib.request.urlopen('http://127.0.0.1:%d/readyz' % port, timeout=1)
            return
        except Exception:
            if proc is not None and proc.poll() is not None:
                raise SystemExit('serve on port %d exited: %s' % (port, open(log).read() if log else ''))
            time.sleep(0.01)
    raise SystemExit('serve on port %d not ready after 30 s' % port)
