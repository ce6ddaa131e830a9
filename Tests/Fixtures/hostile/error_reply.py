#!/usr/bin/env python3
"""error_reply.py: the reference validator, except that from the trigger on it answers every request with
{"id":<id>,"type":"error","code":"internal","message":"boom"}.

Trigger: request number HOSTILE_AFTER+1 (default 31); every reply from then on.
Harness must report: `protocol-violation` (exit 3, "validator error internal: boom") within --timeout; never
exit >= 128.
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
    rid = ctx.request.get("id") if isinstance(ctx.request, dict) else None
    return relay.encode({"id": rid, "type": "error", "code": "internal", "message": "boom"})


relay.run(perturb)
