#!/usr/bin/env python3
"""An iapcheck validator built on Apple's official Python library (app-store-server-library).

Speaks iapcheck's subprocess wire protocol (docs/wire-protocol.md) on stdin/stdout, declaring in hello that it
answers entitlements.active and entitlements.expiresDate from the app's transactions and notifications:

    iapcheck check --catalog Examples/entitlements.json --validator exec:'python3 Examples/python/apple_validator.py'

Two clearly separated layers:
  1. Verification (iapcheck_wire.py, beside this file): Apple's SignedDataVerifier (online checks off) verifies
     every JWS, the envelope of a notification and, separately, the transaction and renewal info nested in it.
     Nothing is added to what the library checks but the app identity and deduplication by notificationUUID (not
     even the kit's size limit), so iapcheck's report shows where the library itself differs.
  2. Entitlements (this file): a small layer that stores the verified facts (the latest signedDate wins) and
     answers in the catalog's entitlements (reset.config.catalog.entitlements): each active when one of its
     products is, expiring with the latest of them (never, if one is a non-consumable). Products grant as
     docs/answers.md says: [purchaseDate, expiresDate), cut by an upgrade in the chain and by revocation; grace
     after the chain's latest transaction while in billing retry; non-renewing periods computed on the calendar.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from iapcheck_wire import add_period, keep_newest, run  # noqa: E402

FOREVER, SUBSCRIPTION, NON_CONSUMABLE = 2**62, "Auto-Renewable Subscription", "Non-Consumable"


def revoked(x, t):
    return x.get("revocationDate") is not None and x["revocationDate"] <= t


def purchase(x):
    """The purchase a transaction belongs to when it can be known under several transactionIds (a restore, a
    second device): its billing period, or its non-consumable purchase (docs/answers.md)."""
    if x.get("type") == SUBSCRIPTION and x.get("webOrderLineItemId"):
        return x["originalTransactionId"] + " period " + x["webOrderLineItemId"]
    return "non-consumable " + x["originalTransactionId"] if x.get("type") == NON_CONSUMABLE else None


class Backend:
    def __init__(self, config):
        catalog = config["catalog"]
        self.policy = config.get("policy") or {}
        self.passes = {p["id"]: p["period"] for p in catalog["products"] if p.get("kind") == "non-renewing"
                       and p.get("period")}  # non-renewing products -> their duration
        self.entitlement_list = catalog.get("entitlements") or []
        self.txs = {}  # transactionId -> newest signed transaction
        self.renewals = {}  # originalTransactionId -> newest signed renewal info
        self.renewal_versions = {}  # originalTransactionId -> {signedDate: renewal info}
        self.owners = {}  # originalTransactionId -> the user the app first submitted it for

    def on_transaction(self, user, tx, now):
        keep_newest(self.txs, tx["transactionId"], tx)
        if user is not None:
            self.owners.setdefault(tx["originalTransactionId"], user)

    def on_notification(self, notification, tx, renewal_info, now):
        # The type is a hint, not state: only the signed snapshots count (tx went to on_transaction already).
        if renewal_info is not None:
            keep_newest(self.renewals, renewal_info["originalTransactionId"], renewal_info)
            versions = self.renewal_versions.setdefault(renewal_info["originalTransactionId"], {})
            versions.setdefault(renewal_info["signedDate"], renewal_info)

    def transactions_of(self, user):
        """Chains the app submitted for the user or that carry the user's appAccountToken; each purchase known
        under several ids as its newest signed version."""
        linked = {otid for otid, u in self.owners.items() if u == user}
        linked |= {x["originalTransactionId"] for x in self.txs.values() if x.get("appAccountToken") == user}
        mine = [x for x in self.txs.values() if x["originalTransactionId"] in linked]
        newest = {}
        for x in sorted(mine, key=lambda x: (x["signedDate"], x["transactionId"])):
            newest[purchase(x)] = x
        return sorted((dict(newest[purchase(x)], transactionId=x["transactionId"]) if purchase(x) else x for x in mine),
                      key=lambda x: (x["purchaseDate"], x["transactionId"]))

    def period_end(self, x, chain):
        """expiresDate, or (policy extensionSignedAs renewal-info) a later renewalDate of a renewal info of its
        product signed during the period (before the chain's next purchase), not in billing retry."""
        end = x["expiresDate"]
        if self.policy.get("extensionSignedAs") == "renewal-info":
            nxt = min([y["purchaseDate"] for y in chain if y["purchaseDate"] > x["purchaseDate"]], default=FOREVER)
            versions = self.renewal_versions.get(x["originalTransactionId"], {})
            end = max([end] + [r["renewalDate"] for s, r in versions.items()
                               if x["purchaseDate"] <= s < nxt and not r.get("isInBillingRetryPeriod")
                               and r.get("productId") == x["productId"] and r.get("renewalDate") is not None])
        return end

    def active_products(self, known, every, t):
        """productId -> expiry (None: never) of each product the user may use at t (docs/answers.md)."""
        policy, paid, grace = self.policy, {}, {}  # productId -> ends of its grants
        for otid in sorted({x["originalTransactionId"] for x in known}):
            chain = [x for x in known if x["originalTransactionId"] == otid]
            whole = [x for x in every if x["originalTransactionId"] == otid]  # also those purchased after t
            refunds = [x["revocationDate"] for x in chain if revoked(x, t) and policy.get("refundScope") == "chain"]

            def void(x):
                return revoked(x, t) or any(x["purchaseDate"] < r for r in refunds)

            for x in chain:
                if x.get("type") == NON_CONSUMABLE and not void(x):
                    paid.setdefault(x["productId"], []).append(None)
                if x.get("type") != SUBSCRIPTION or void(x) or x.get("expiresDate") is None:
                    continue
                end = expires = self.period_end(x, whole)
                if not (policy.get("upgradeDuringIntro") == "union" and x.get("offerType") == 1):
                    # An immediate upgrade or crossgrade: a later PURCHASE of the chain inside x's period ends it.
                    cuts = [y["purchaseDate"] for y in whole if x["purchaseDate"] < y["purchaseDate"] < expires
                            and (y.get("transactionReason") == "PURCHASE"
                                 or (y.get("transactionReason") is None and x.get("isUpgraded")))]
                    end = min(cuts + [expires])
                    if not cuts and x.get("isUpgraded"):  # the upgrade is unknown: it happened before the flag
                        end = min(end, x["signedDate"])
                if x["purchaseDate"] <= t < end:
                    paid.setdefault(x["productId"], []).append(expires)
            subs = [x for x in chain if x.get("type") == SUBSCRIPTION]
            renewal = self.renewals.get(otid) or {}
            until = renewal.get("gracePeriodExpiresDate")
            retry = renewal.get("isInBillingRetryPeriod") or policy.get("graceWithoutRetryFlag") != "deny"
            if subs and not void(subs[-1]) and retry and until and subs[-1].get("expiresDate", FOREVER) <= t < until:
                grace.setdefault(subs[-1]["productId"], []).append(until)
        for pid, period in self.passes.items():
            end = None  # non-renewing: the catalog's period from the purchase (or, stacked, from the last end)
            for x in (x for x in known if x["productId"] == pid):
                start = max(x["purchaseDate"], end) if end and policy.get("nonRenewingStacking") else x["purchaseDate"]
                end = add_period(start, period)
                if not revoked(x, t) and start <= t < end:
                    paid.setdefault(pid, []).append(end)
        # Paid access outranks grace: a product in both expires with its paid grants.
        return {pid: max((e for e in paid.get(pid) or grace[pid] if e is not None), default=None)
                for pid in set(paid) | set(grace)}

    def entitlements(self, user, t):
        every = self.transactions_of(user)
        known = [x for x in every if x["purchaseDate"] <= t]  # in purchase order
        active = self.active_products(known, every, t)
        listed = {x["productId"] for x in known if x.get("type") != "Consumable"}
        answer = []
        for e in (e for e in self.entitlement_list if listed & set(e["products"])):
            ends = [active[pid] for pid in e["products"] if pid in active]
            answer.append({"entitlementId": e["id"], "active": bool(ends)})
            if ends and None not in ends:
                answer[-1]["expiresDate"] = max(ends)
        return {"entitlements": answer}


if __name__ == "__main__":
    run(Backend, name="apple-app-store-server-library-python",
        answers=["entitlements.active", "entitlements.expiresDate"], channels=["app-transaction", "notification"],
        max_token_bytes=None)
