#!/usr/bin/env python3
"""wrong_types.py: the reference validator, except that from the trigger on query answers carry a field of the
wrong JSON type. HOSTILE_MODE picks which:
  active       (default) a product's `active` is the string "yes"
  expiresDate  a product's `expiresDate` is a string of digits ("1774915200000")
  balance      a consumable's `balance` is the float 1.5
  products     `products` is an object keyed by productId instead of an array

Trigger: the first query after HOSTILE_AFTER queries (default 30) that has the field to spoil.
Harness must report: `bad-answer` (exit 3) on that query, within --timeout; never exit >= 128.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _relay as relay  # noqa: E402


def first(items, key=None):
    for item in items or []:
        if key is None or item.get(key) is not None:
            return item
    return None


def edit(ctx, reply):
    answer = reply["answer"]
    mode = ctx.mode or "active"
    if mode == "active":
        p = first(answer.get("products"))
        if p is None:
            return False
        p["active"] = "yes"
    elif mode == "expiresDate":
        p = first(answer.get("products"), "expiresDate")
        if p is None:
            return False
        p["expiresDate"] = str(p["expiresDate"])
    elif mode == "balance":
        c = first(answer.get("consumables"))
        if c is None:
            return False
        c["balance"] = 1.5
    elif mode == "products":
        answer["products"] = {p["productId"]: p for p in answer.get("products") or []}
    else:
        raise SystemExit("wrong_types.py: unknown HOSTILE_MODE %r" % mode)
    return True


relay.run(relay.edit_answer(edit))
