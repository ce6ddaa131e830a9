#!/usr/bin/env python3
"""Test fixture: a correct product-level validator that takes three readings Apple leaves open.

This is not an example backend; it exists to prove that iapcheck's *default* policy accepts a validator that reads
the facts differently from iapcheck's own reference wherever docs/answers.md ("What the facts leave open") says
either reading is right. It speaks the subprocess wire protocol through the kit Examples/python/iapcheck_wire.py
(Apple's app-store-server-library verifies every JWS) and answers per product (`products.active`,
`products.state`, `products.expiresDate`, `products.ownership`) from the channels `app-transaction` and
`notification`. Everything else follows docs/answers.md and docs/semantics.md#grant-intervals exactly.

The three readings:

1. **No token size cap** (docs/semantics.md#q19-token-size). The kit refuses tokens over 256 KiB unverified; this
   validator passes `max_token_bytes=None`, so a validly signed oversized token is verified by the library and its
   genuine facts are learned. With a policy `{"tokenSizeLimit": 262144}` it must fail (it ignores the limit on
   purpose: that run shows the reading is exercised).
2. **Own grace under a family share** (Q18, access; `--paid-first` takes the other reading, below). While the user's own chain is in billing retry with a grace
   date after t (its latest transaction expired) and a family-shared chain of the same product covers t, the
   product is `active` (a paid grant covers it), its expiresDate is the latest end among *all* covering grants,
   paid and grace, and its ownership is `PURCHASED` because one covering grant is the user's own.
   With `--paid-first`, while a paid grant covers the product only paid grants count: their end and ownership
   (`FAMILY_SHARED` for a share), the user's own grace only once no paid grant covers. Both are right by default.
3. **Best state of an inactive product** (Q18, state). When no grant covers a product held through several chains
   ending in different states, the state is the best of them by rank active > grace > billing-retry > expired >
   revoked (iapcheck's reference takes the chain purchased last; under the default policy `inactiveState: either`
   the state is not compared then, and `inactiveState: latest-purchase` pins the reference's choice).

How CI runs it (from the repository root, default policy, each case drawing its own catalog):

    iapcheck check --no-corpus --cases 2000 --seed N \\
        --validator exec:'python3 Tests/Fixtures/readings/readings_validator.py' --jobs 2

for N = 1, 2, 3, 4; every case must pass. See README.md beside this file.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "Examples", "python"))
from iapcheck_wire import add_period, keep_newest, run  # noqa: E402

FOREVER = 2**62
# Reading 2 the other way: `--paid-first` reports the paid grant (a family share) while one covers the product.
PAID_FIRST = "--paid-first" in sys.argv[1:]
SUBSCRIPTION, NON_CONSUMABLE, CONSUMABLE = "Auto-Renewable Subscription", "Non-Consumable", "Consumable"
PURCHASED = "PURCHASED"
# Reading 3: the best state first.
STATE_RANK = {"active": 0, "grace": 1, "billing-retry": 2, "expired": 3, "revoked": 4}


def revoked(x, t):
    """Revoked at t: `revocationDate ≤ t` (refund or family revoke)."""
    return x.get("revocationDate") is not None and x["revocationDate"] <= t


def purchase_key(x):
    """The purchase a transaction belongs to when it can be known under several transactionIds (a restore, a
    second device, a re-grant): its billing period, or its non-consumable purchase; None otherwise
    (docs/answers.md#one-purchase-several-transactionids)."""
    if x.get("type") == SUBSCRIPTION:
        return (x["originalTransactionId"], x["webOrderLineItemId"]) if x.get("webOrderLineItemId") else None
    return (x["originalTransactionId"], None) if x.get("type") == NON_CONSUMABLE else None


def purchase_order(x):
    return (x["purchaseDate"], x["transactionId"])


def signing_order(x):
    return (x.get("signedDate", 0), x["transactionId"])


class Backend:
    def __init__(self, config):
        catalog = config["catalog"]
        self.policy = config.get("policy") or {}
        self.passes = {}  # non-renewing productId -> its catalog period (the first product of an id)
        for p in catalog.get("products") or []:
            if p.get("kind") == "non-renewing" and p["id"] not in self.passes:
                self.passes[p["id"]] = p.get("period")
        self.txs = {}  # transactionId -> newest signed transaction
        self.renewals = {}  # originalTransactionId -> newest signed renewal info
        self.renewal_versions = {}  # originalTransactionId -> {signedDate: first renewal info of that signedDate}
        self.owners = {}  # originalTransactionId -> the user the app first submitted it for

    # Facts -----------------------------------------------------------------------------------------------------

    def on_transaction(self, user, tx, now):
        keep_newest(self.txs, tx["transactionId"], tx)
        if user is not None:
            self.owners.setdefault(tx["originalTransactionId"], user)

    def on_notification(self, notification, tx, renewal_info, now):
        # The type is a hint, not state: only the signed snapshots count (tx went to on_transaction already).
        if renewal_info is not None:
            otid = renewal_info["originalTransactionId"]
            keep_newest(self.renewals, otid, renewal_info)
            self.renewal_versions.setdefault(otid, {}).setdefault(renewal_info.get("signedDate", 0), renewal_info)

    # Reading ---------------------------------------------------------------------------------------------------

    def chains_of(self, user):
        """The user's chains (submitted by them or carrying their appAccountToken), each sorted by purchase, every
        purchase known under several ids read as its newest signed version under each of them."""
        linked = {otid for otid, u in self.owners.items() if u == user}
        linked |= {x["originalTransactionId"] for x in self.txs.values() if x.get("appAccountToken") == user}
        by_chain = {}
        for x in self.txs.values():
            if x["originalTransactionId"] in linked:
                by_chain.setdefault(x["originalTransactionId"], []).append(x)
        chains = {}
        for otid, txs in by_chain.items():
            newest = {}
            for x in sorted(txs, key=signing_order):
                if purchase_key(x) is not None:
                    newest[purchase_key(x)] = x
            same = []
            for x in txs:
                n = newest.get(purchase_key(x)) if purchase_key(x) is not None else None
                same.append(dict(n, transactionId=x["transactionId"]) if n is not None else x)
            chains[otid] = sorted(same, key=purchase_order)
        return chains

    def period_end(self, x, whole):
        """x's `expiresDate`, or (policy extensionSignedAs renewal-info) a later renewalDate of a renewal info of
        x's product signed during x's period (before the chain's next purchase) and not in billing retry."""
        end = x["expiresDate"]
        if self.policy.get("extensionSignedAs") == "renewal-info":
            nxt = min([y["purchaseDate"] for y in whole if y["purchaseDate"] > x["purchaseDate"]], default=FOREVER)
            said = [r["renewalDate"] for s, r in self.renewal_versions.get(x["originalTransactionId"], {}).items()
                    if x["purchaseDate"] <= s < nxt and r.get("isInBillingRetryPeriod") is not True
                    and r.get("productId") == x["productId"] and r.get("renewalDate") is not None]
            if said and max(said) > end:
                end = max(said)
        return end

    def entitlements(self, user, t):
        policy = self.policy
        chains = self.chains_of(user)
        paid, grace = {}, {}  # productId -> [(end or None, own purchase?)]
        chain_states = {}  # productId -> states of the chains whose latest transaction (by t) is that product
        known = []  # every transaction of the user purchased at or before t
        for otid in sorted(chains):
            whole = chains[otid]  # also those purchased after t: a later upgrade bounds an earlier period
            chain = [x for x in whole if x["purchaseDate"] <= t]
            if not chain:
                continue
            known += chain
            refunds = [x["revocationDate"] for x in chain if revoked(x, t)] if policy.get("refundScope") == "chain" \
                else []

            def void(x):
                return revoked(x, t) or any(x["purchaseDate"] < r for r in refunds)

            for x in chain:
                own = x.get("inAppOwnershipType") == PURCHASED
                if x.get("type") == NON_CONSUMABLE:
                    if not void(x):
                        paid.setdefault(x["productId"], []).append((None, own))
                    continue
                if x.get("type") != SUBSCRIPTION or void(x) or x.get("expiresDate") is None:
                    continue
                expires = self.period_end(x, whole)
                if policy.get("upgradeDuringIntro") == "union" and x.get("offerType") == 1:
                    end = expires  # the introductory period runs its course beside the new product
                else:
                    # An immediate upgrade or crossgrade: a later PURCHASE of the chain inside x's period ends it
                    # (no reason given: only when x is flagged isUpgraded).
                    cuts = [y["purchaseDate"] for y in whole if x["purchaseDate"] < y["purchaseDate"] < expires
                            and (y.get("transactionReason") == "PURCHASE"
                                 or (y.get("transactionReason") is None and x.get("isUpgraded") is True))]
                    end = min(cuts + [expires])
                    if not cuts and x.get("isUpgraded") is True:
                        end = min(end, x["signedDate"])  # upgraded, the upgrade unknown: no later than the flag
                if x["purchaseDate"] <= t < end:
                    paid.setdefault(x["productId"], []).append((expires, own))
            # Grace and the chain's state, from its latest auto-renewable transaction purchased at or before t.
            subs = [x for x in chain if x.get("type") == SUBSCRIPTION]
            if not subs:
                continue
            latest = subs[-1]
            renewal = self.renewals.get(otid) or {}
            until = renewal.get("gracePeriodExpiresDate")
            in_retry = renewal.get("isInBillingRetryPeriod") is True or (
                until is not None and policy.get("graceWithoutRetryFlag") != "deny")
            if not void(latest) and in_retry and latest.get("expiresDate") is not None \
                    and latest["expiresDate"] <= t and until is not None and t < until:
                grace.setdefault(latest["productId"], []).append((until, latest.get("inAppOwnershipType") == PURCHASED))
            state = "revoked" if void(latest) else "billing-retry" if in_retry else "expired"
            chain_states.setdefault(latest["productId"], set()).add(state)

        # Reading 3: an inactive product's state is the best among its chains' states.
        inactive = {pid: min(states, key=STATE_RANK.get) for pid, states in chain_states.items()}

        # Non-renewing: the catalog's period from each purchase (stacked by policy), by product id.
        stacking = policy.get("nonRenewingStacking") is True
        for pid, period in self.passes.items():
            txs = sorted((x for x in known if x["productId"] == pid), key=purchase_order)
            if not txs or not period:
                continue
            last_end = None
            for x in txs:
                start = max(x["purchaseDate"], last_end) if stacking and last_end is not None else x["purchaseDate"]
                end = last_end = add_period(start, period)
                if not revoked(x, t) and start <= t < end:
                    paid.setdefault(pid, []).append((end, x.get("inAppOwnershipType") == PURCHASED))
            inactive[pid] = "revoked" if revoked(txs[-1], t) else "expired"

        listed = {x["productId"] for x in known if x.get("type") != CONSUMABLE}
        non_consumables = {x["productId"] for x in known if x.get("type") == NON_CONSUMABLE}
        products = []
        for pid in sorted(listed):
            # Reading 2: paid access gives the state; the end is the latest over every covering grant, paid or
            # grace (the user's own grace still grants under a family share), owned if any of them is the user's.
            # With --paid-first (the reading three of four independent validators take): while a paid grant covers
            # the product, only paid grants count, their end and ownership; grace only once none does.
            covering = (paid.get(pid) or []) + ([] if PAID_FIRST and paid.get(pid) else (grace.get(pid) or []))
            if covering:
                ends = [e for e, _ in covering if e is not None]
                products.append({"productId": pid, "active": True, "state": "active" if pid in paid else "grace",
                                 "expiresDate": max(ends) if ends else None,
                                 "ownership": PURCHASED if any(o for _, o in covering) else "FAMILY_SHARED"})
            else:
                state = inactive.get(pid) or ("revoked" if pid in non_consumables else "expired")
                products.append({"productId": pid, "active": False, "state": state})
        return {"products": products}


if __name__ == "__main__":
    run(Backend, name="readings-fixture",
        answers=["products.active", "products.state", "products.expiresDate", "products.ownership"],
        channels=["app-transaction", "notification"],
        max_token_bytes=None)  # reading 1: no size cap
