#!/usr/bin/env python3
"""exit_midrun.py: the reference validator, except that at the trigger it exits with status 3 instead of
replying (after the request was read; its child, the reference, sees EOF and exits too).

Trigger: request number HOSTILE_AFTER+1 (default 31).
Harness must report: `crashed` (exit 3) with "status 3" within --timeout (promptly: the process is gone, there
is nothing to wait for); the next reset starts a fresh process. Never exit >= 128.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _relay as relay  # noqa: E402


def perturb(ctx, reply):
    if not ctx.request_trigger():
        return reply
    relay.log("exit_midrun: exiting with status 3 at request %d" % ctx.requests)
    relay.quiet_exit(3)


relay.run(perturb)
