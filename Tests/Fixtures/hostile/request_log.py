#!/usr/bin/env python3
"""request_log.py: a perfectly correct validator (the reference) that logs every request it receives to stderr,
one line each, for the whole run, like a web framework's access log: a timestamp, the request's id and type, and
the full request line (signed artifacts included, several KB each). Nothing is wrong with it.

Trigger: none (it logs from the first request).
Harness must report: PASS (exit 0) over 2,000 cases (run.sh: --cases 2000), i.e. it must keep draining stderr for
the whole run (tens of MB in total) and keep only a bounded tail of it.
"""
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _relay as relay  # noqa: E402


def perturb(ctx, reply):
    r = ctx.request if isinstance(ctx.request, dict) else {}
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    relay.log('%s INFO request id=%s type=%s body=%s' % (stamp, r.get("id"), r.get("type"),
                                                         relay.encode(r).decode().rstrip("\n")))
    return reply


relay.run(perturb)
