#!/usr/bin/env python3
"""wrong_id.py: the reference validator, except that from the trigger on every reply carries id+1 (the id of the
request that has not been sent yet) instead of the id of the request it answers.

Trigger: request number HOSTILE_AFTER+1 (default 31); every reply from then on.
Harness must report: `protocol-violation` (exit 3) within --timeout ("reply id N+1 does not answer request N");
never exit >= 128.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _relay as relay  # noqa: E402


def perturb(ctx, reply):
    if not ctx.request_trigger():
        return reply
    obj = relay.decode(reply)
    if not isinstance(obj, dict) or not isinstance(obj.get("id"), int):
        return reply
    ctx.fire()
    obj["id"] += 1
    return relay.encode(obj)


relay.run(perturb)
