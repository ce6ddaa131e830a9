#!/usr/bin/env python3
"""huge_line.py: the reference validator, except that at the trigger it answers with one reply line of 300 MB
(HOSTILE_BYTES), written in 1 MB chunks with no newline until the very end. The line is otherwise a valid reply
(the real one with a "padding" string of 300 MB inside), so only its size is wrong. Afterwards it relays normally.
It may be killed midway: a closed pipe ends it quietly.

Trigger: request number HOSTILE_AFTER+1 (default 31), once per process.
Harness must report: `bad-answer` (exit 3, a reply line over its size limit) within --timeout, without
buffering the whole line (bounded memory) and never exit >= 128.
"""
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _relay as relay  # noqa: E402

SIZE = int(os.environ.get("HOSTILE_BYTES", str(300 * 1000 * 1000)))
CHUNK = b"x" * (1 << 20)


def perturb(ctx, reply):
    if ctx.requests != ctx.after + 1:
        return reply
    ctx.fire()
    real = relay.decode(reply) or {"id": -1, "type": "error"}
    head = json.dumps(real, separators=(",", ":"), sort_keys=True)[:-1] + ',"padding":"'
    ctx.write(head.encode())
    left = SIZE
    while left > 0:
        n = min(left, len(CHUNK))
        ctx.write(CHUNK[:n])
        left -= n
    ctx.write(b'"}\n')
    return None


relay.run(perturb)
