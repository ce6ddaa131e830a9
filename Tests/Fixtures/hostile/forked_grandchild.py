#!/usr/bin/env python3
"""forked_grandchild.py: the reference validator, except that at the trigger it forks a grandchild that detaches
(os.setsid, a new session: not in the harness's process group, reparented to init when the parent exits), keeps
the inherited stdout and stderr open and sleeps 600 s (HOSTILE_SLEEP); then the parent exits (status 0) without
replying. The validator's stdout never reaches EOF while the grandchild lives.

Trigger: request number HOSTILE_AFTER+1 (default 31).
Harness must report: `crashed` (exit 3) promptly (well within --timeout: the process it started has exited, EOF
on stdout is not the signal to wait for), and must kill the grandchild or at least not wait for it (nor for EOF on
stderr). Never exit >= 128. With HOSTILE_PIDFILE set the grandchild's pid is recorded there for cleanup.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _relay as relay  # noqa: E402


def perturb(ctx, reply):
    if not ctx.request_trigger():
        return reply
    pid = os.fork()
    if pid == 0:  # the grandchild
        os.setsid()
        # Let the reference validator see EOF when the parent exits; keep fds 0, 1, 2 (the harness's pipes).
        for f in (ctx.child.stdin, ctx.child.stdout):
            try:
                f.close()
            except Exception:
                pass
        relay.record_pid()
        relay.sleep_forever()
    relay.log("forked_grandchild: parent %d exits, grandchild %d keeps stdout/stderr open" % (os.getpid(), pid))
    relay.quiet_exit(0)


relay.run(perturb)
