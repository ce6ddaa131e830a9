#!/usr/bin/env python3
"""dup_groups.py: the reference validator, except that from the trigger on every query answer lists one
subscription group twice (an exact copy of its first entry, next to it).

Trigger: the first query after HOSTILE_AFTER queries (default 30); every answer has one entry per catalog group.
Harness must report: a malformed answer, `bad-answer` (exit 3), on that query, within --timeout; never crash
(e.g. on building a dictionary keyed by groupId) and never exit >= 128.
"""
import copy
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _relay as relay  # noqa: E402


def edit(ctx, reply):
    groups = reply["answer"].get("groups")
    if not groups:
        return False
    groups.insert(1, copy.deepcopy(groups[0]))
    return True


relay.run(relay.edit_answer(edit))
