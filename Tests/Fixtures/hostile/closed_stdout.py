#!/usr/bin/env python3
"""closed_stdout.py: the reference validator, except that at the trigger it closes its stdout without replying
and keeps running (sleeps forever, HOSTILE_SLEEP, default 600 s; stdin and stderr stay open, nothing is read).

Trigger: request number HOSTILE_AFTER+1 (default 31).
Harness must report: exit 3, and kill the process rather than wait for it to exit. Never exit >= 128. The kind
depends on who else holds the pipe: run as exec:'exec python3 closed_stdout.py' the harness sees EOF from a live
process and must report `crashed` at once; run as exec:'python3 closed_stdout.py' the `/bin/sh -c` in between
(dash does not exec the last command) keeps its copy of stdout open, so the harness sees silence: `timed-out`
at --timeout.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _relay as relay  # noqa: E402


def perturb(ctx, reply):
    if not ctx.request_trigger():
        return reply
    relay.log("closed_stdout: closing stdout at request %d and sleeping" % ctx.requests)
    os.close(relay.OUT)
    relay.sleep_forever()


relay.run(perturb)
