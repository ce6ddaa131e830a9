#!/usr/bin/env python3
"""binary_garbage.py: the reference validator, except that from the trigger on every reply is a line of random
bytes: NULs, invalid UTF-8 (lone continuation bytes, 0xFE/0xFF, a truncated sequence), control characters, ending
in a newline (the only newline in it). Deterministic per request number.

Trigger: request number HOSTILE_AFTER+1 (default 31); every reply from then on.
Harness must report: `bad-answer` (exit 3) within --timeout, showing the garbage escaped or replaced (it must
not choke on decoding it); never exit >= 128.
"""
import os
import random
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _relay as relay  # noqa: E402


def perturb(ctx, reply):
    if not ctx.request_trigger():
        return reply
    ctx.fire()
    rng = random.Random(ctx.requests)
    junk = bytes(rng.randrange(256) for _ in range(512)).replace(b"\n", b"\x00")
    return b"\x00\xff\xfe\x80\xbf\xc3\x28{\"id\":" + junk + b"\xe2\x82\n"


relay.run(perturb)
