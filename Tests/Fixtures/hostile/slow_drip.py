#!/usr/bin/env python3
"""slow_drip.py: the reference validator, except that from the trigger on it writes each (valid) reply one byte
per second (HOSTILE_DRIP seconds per byte), so a reply takes minutes but bytes keep arriving.

Trigger: request number HOSTILE_AFTER+1 (default 31).
Harness must report: `timed-out` (exit 3) within --timeout of that request: the deadline is per reply, not per
byte (arriving bytes must not reset it). It must kill the process. Never exit >= 128.
"""
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _relay as relay  # noqa: E402

DRIP = float(os.environ.get("HOSTILE_DRIP", "1"))


def perturb(ctx, reply):
    if not ctx.request_trigger():
        return reply
    ctx.fire()
    for i in range(len(reply)):
        ctx.write(reply[i:i + 1])
        time.sleep(DRIP)
    return None


relay.run(perturb)
