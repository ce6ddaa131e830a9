#!/usr/bin/env python3
"""half_line.py: the reference validator, except that at the trigger it writes the first half of its (valid)
reply line, flushes, and then sleeps forever (HOSTILE_SLEEP, default 600 s) without reading or writing.

Trigger: request number HOSTILE_AFTER+1 (default 31).
Harness must report: `timed-out` (exit 3) within --timeout of that request, and kill the process (and its
child, the reference validator); never exit >= 128.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _relay as relay  # noqa: E402


def perturb(ctx, reply):
    if not ctx.request_trigger():
        return reply
    ctx.fire()
    ctx.write(reply[: len(reply) // 2])
    relay.sleep_forever()


relay.run(perturb)
