#!/usr/bin/env python3
"""huge_numbers.py: the reference validator, except that from the trigger on query answers carry numbers that do
not fit the protocol's integers. HOSTILE_MODE picks which:
  expires   (default) a product's `expiresDate` is 1e30 (JSON "1e+30"; no Int64 holds it)   -> bad-answer, exit 3
  balance   a consumable's `balance` is 99999999999999999999999 (beyond Int64)               -> bad-answer, exit 3
  negid     the reply `id` is -9223372036854775808 (Int64.min: decodes, answers nothing)     -> protocol-violation, exit 3
  bigid     the reply `id` is 2^64 + id (beyond Int64)                                        -> bad-answer, exit 3
  int64min  an active product's `expiresDate` is -9223372036854775808: a well-typed wrong answer, so a
            discrepancy (exit 1) whose report must print that date without overflowing
  int64max  the same with 9223372036854775807                                                -> discrepancy, exit 1

Trigger: the first query after HOSTILE_AFTER queries (default 30) that has the field to spoil.
Harness must report the outcome above within --timeout; never exit >= 128.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _relay as relay  # noqa: E402


INT64_MIN = -(2 ** 63)
INT64_MAX = 2 ** 63 - 1


def edit(ctx, reply):
    answer = reply["answer"]
    mode = ctx.mode or "expires"
    products = answer.get("products") or []
    if mode == "expires":
        if not products:
            return False
        p = next((p for p in products if p.get("expiresDate") is not None), products[0])
        p["expiresDate"] = 1e30
    elif mode == "balance":
        consumables = answer.get("consumables")
        if not consumables:
            return False
        consumables[0]["balance"] = 99999999999999999999999
    elif mode == "negid":
        reply["id"] = INT64_MIN
    elif mode == "bigid":
        reply["id"] = 2 ** 64 + reply["id"]
    elif mode in ("int64min", "int64max"):
        p = next((p for p in products if p.get("active") is True), None)
        if p is None:
            return False
        p["expiresDate"] = INT64_MIN if mode == "int64min" else INT64_MAX
    else:
        raise SystemExit("huge_numbers.py: unknown HOSTILE_MODE %r" % mode)
    return True


relay.run(relay.edit_answer(edit))
