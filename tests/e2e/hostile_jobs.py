"""Jobs that try to outlive themselves, for the tests that make sure none does (issue 11, class 1)
and the red-team harness: every process ignores SIGTERM, each pod starts a ``setsid`` child that
double-forks a daemon, and a child that SIGSTOPs itself. Each prints ``PID <role> <pid>``."""

from __future__ import annotations

# The daemon: its own session (setsid), then a double fork whose middle process exits, so the
# last one has neither its parent nor its pod's process group; it ignores SIGTERM.
DAEMON = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
if os.fork():
    os._exit(0)
print("PID daemon", os.getpid(), flush=True)
time.sleep(600)
"""
STOPPED = """
import os, signal, time
print("PID stopped", os.getpid(), flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
time.sleep(600)
"""
POD = f"""
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("PID pod", os.getpid(), flush=True)
child = subprocess.Popen(["setsid", sys.executable, "-c", {DAEMON!r}])
print("PID setsid", child.pid, flush=True)
subprocess.Popen([sys.executable, "-c", {STOPPED!r}])
if os.environ["INDEX"] == "1" and os.environ.get("FAIL_AFTER"):
    time.sleep(float(os.environ["FAIL_AFTER"]))
    sys.exit(3)
time.sleep(600)
"""
ROLES = {"pod", "setsid", "daemon", "stopped"}

# POD, whose daemon also clears its environment (``subprocess.Popen(env={...})``, as many tools
# do): it carries no owner mark, so only what the supervisor saw of it says whose it is.
CLEARED_POD = POD.replace(
    'subprocess.Popen(["setsid", sys.executable, "-c", ',
    'subprocess.Popen(env={"PATH": os.environ["PATH"]}, args=["setsid", sys.executable, "-c", ',
)
assert CLEARED_POD != POD
