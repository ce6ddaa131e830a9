#!/usr/bin/env python3
"""dup_consumables.py: the reference validator, except that from the trigger on every query answer lists one
consumable balance twice (an exact copy of its first entry, next to it).

Trigger: the first query with at least one consumable after HOSTILE_AFTER queries (default 30).
Harness must report: a malformed answer, `bad-answer` (exit 3), on that query, within --timeout; never crash
(e.g. on building a dictionary keyed by productId) and never exit >= 128.
"""
import copy
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _relay as relay  # noqa: E402


def edit(ctx, reply):
    consumables = reply["answer"].get("consumables")
    if not consumables:
        return False
    consumables.insert(1, copy.deepcopy(consumables[0]))
    return True


relay.run(relay.edit_answer(edit))
