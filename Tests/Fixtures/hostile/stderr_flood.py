#!/usr/bin/env python3
"""stderr_flood.py: a correct validator (the reference) that, once, writes 50 MB (HOSTILE_BYTES) to stderr
before replying normally to one request, then carries on normally.

Trigger: request number HOSTILE_AFTER+1 (default 31), once per process.
Harness must report: PASS (exit 0). A harness that does not drain the validator's stderr while it waits for a
reply deadlocks here (the validator blocks on a full stderr pipe); one that keeps all of stderr grows by 50 MB.
Keep only a bounded tail of stderr for failure reports.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _relay as relay  # noqa: E402

SIZE = int(os.environ.get("HOSTILE_BYTES", str(50 * 1000 * 1000)))


def perturb(ctx, reply):
    if ctx.requests == ctx.after + 1:
        ctx.fire()
        line = b"W stderr_flood: a very chatty warning that repeats a lot ........................................\n"
        block = line * (65536 // len(line))
        left = SIZE
        try:
            while left > 0:
                chunk = block[: min(left, len(block))]
                relay.write_all(relay.ERR, chunk)
                left -= len(chunk)
        except OSError:
            pass  # stderr closed: nothing to flood
    return reply


relay.run(perturb)
