#!/usr/bin/env python3
"""unknown_state.py: the reference validator, except that from the trigger on a product's `state` is "zombie",
a value not in the documented list (active, grace, billing-retry, expired, revoked; docs/answers.md).

Trigger: the first query with at least one product after HOSTILE_AFTER queries (default 30).
Harness must report: `bad-answer` (exit 3) on that query, within --timeout; never exit >= 128.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _relay as relay  # noqa: E402


def edit(ctx, reply):
    products = reply["answer"].get("products")
    if not products:
        return False
    products[0]["state"] = "zombie"
    return True


relay.run(relay.edit_answer(edit))
