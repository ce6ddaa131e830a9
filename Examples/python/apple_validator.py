#!/usr/bin/env python3
"""An iapcheck validator built on Apple's official Python library (app-store-server-library).

Speaks iapcheck's subprocess wire protocol (docs/wire-protocol.md) on stdin/stdout:

    iapcheck check --validator exec:'python3 Examples/python/apple_validator.py'

Two clearly separated layers:
  1. Verification: Apple's SignedDataVerifier (online checks off) verifies every JWS, the envelope of a
     notification and, separately, the transaction and renewal info nested in it. Nothing is added on top of
     what the library checks, so iapcheck's report shows where the library itself differs.
  2. Entitlements: a small layer that stores the verified facts (latest signedDate wins, notifications deduped
     by notificationUUID) and answers iapcheck's entitlement questions the way its reference validator does
     (docs/answers.md).
"""
import base64
import json
import sys

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier

# ---------------------------------------------------------------------------------------------- verification


def payload_of(jws):
    """The JSON payload of a JWS the library has already verified."""
    segment = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


class Verification:
    def __init__(self, config):
        cat = config["catalog"]
        roots = [base64.b64decode(r) for r in config.get("trustedRoots", [])]
        self.bundle_id = cat["bundleId"]
        self.app_apple_id = cat["appAppleId"]
        self.environment = cat["environment"]
        self.verifier = SignedDataVerifier(roots, False, Environment(self.environment), self.bundle_id, self.app_apple_id)

    def transaction(self, jws):
        self.verifier.verify_and_decode_signed_transaction(jws)
        return payload_of(jws)

    def renewal(self, jws):
        self.verifier.verify_and_decode_renewal_info(jws)
        return payload_of(jws)

    def notification(self, signed_payload):
        self.verifier.verify_and_decode_notification(signed_payload)
        body = payload_of(signed_payload)
        data = body.get("data") or {}
        # The library does not verify nested JWS: each one is verified here, like any other.
        tx = self.transaction(data["signedTransactionInfo"]) if data.get("signedTransactionInfo") else None
        renewal = self.renewal(data["signedRenewalInfo"]) if data.get("signedRenewalInfo") else None
        return body, tx, renewal


# ---------------------------------------------------------------------------------------------- entitlements


class Entitlements:
    def __init__(self, config):
        cat = config["catalog"]
        self.products = {p["id"]: p for p in cat["products"]}
        self.groups = [g["id"] for g in cat["groups"]]
        self.policy = config.get("policy", {})
        self.bundle_id = cat["bundleId"]
        self.environment = cat["environment"]
        self.transactions = {}  # transactionId -> payload
        self.renewals = {}  # originalTransactionId -> payload
        self.renewal_dates = {}  # originalTransactionId -> {signedDate: renewal info out of billing retry}
        self.owners = {}  # originalTransactionId -> userId (app submissions, legacy receipts)
        self.seen_uuids = set()

    def store_tx(self, tx):
        old = self.transactions.get(tx["transactionId"])
        if old is None or tx["signedDate"] > old["signedDate"]:
            self.transactions[tx["transactionId"]] = tx

    def store_renewal(self, r):
        if r.get("renewalDate") is not None and not r.get("isInBillingRetryPeriod"):
            self.renewal_dates.setdefault(r["originalTransactionId"], {})[r["signedDate"]] = r
        old = self.renewals.get(r["originalTransactionId"])
        if old is None or r["signedDate"] > old["signedDate"]:
            self.renewals[r["originalTransactionId"]] = r

    def link(self, otid, user):
        self.owners.setdefault(otid, user)

    def linked(self, user):
        chains = {otid for otid, u in self.owners.items() if u == user}
        chains |= {t["originalTransactionId"] for t in self.transactions.values() if t.get("appAccountToken") == user}
        return chains

    def period_end(self, tx):
        # Policy extensionSignedAs "renewal-info": an extension may move only the renewal info's renewalDate. The
        # newest renewal info of the product signed while tx was the chain's newest purchase says where it ends.
        end = tx.get("expiresDate")
        if self.policy.get("extensionSignedAs") != "renewal-info" or end is None:
            return end
        otid = tx["originalTransactionId"]
        later = [x["purchaseDate"] for x in self.transactions.values()
                 if x["originalTransactionId"] == otid and x["purchaseDate"] > tx["purchaseDate"]]
        nxt = min(later) if later else None
        said = [r for s, r in self.renewal_dates.get(otid, {}).items()
                if s >= tx["purchaseDate"] and (nxt is None or s < nxt) and r.get("productId") == tx["productId"]]
        if said:
            end = max(end, max(said, key=lambda r: r["signedDate"])["renewalDate"])
        return end

    @staticmethod
    def revoked(tx, t):
        return tx.get("revocationDate") is not None and tx["revocationDate"] <= t

    def purchases(self):
        # One purchase can arrive under several transactionIds (a restore, a second device, a re-grant): the ids
        # of a billing period share webOrderLineItemId, those of a non-consumable its originalTransactionId. The
        # newest signed version under any of them is what is known of the purchase.
        def key(tx):
            if tx["type"] == "Auto-Renewable Subscription" and tx.get("webOrderLineItemId"):
                return "period " + tx["webOrderLineItemId"]
            if tx["type"] == "Non-Consumable":
                return "non-consumable " + tx["originalTransactionId"]
            return None
        newest = {}
        for tx in self.transactions.values():
            k = key(tx)
            if k is not None and (k not in newest or (tx["signedDate"], tx["transactionId"]) > (newest[k]["signedDate"], newest[k]["transactionId"])):
                newest[k] = tx
        out = []
        for tx in self.transactions.values():
            k = key(tx)
            out.append(tx if k is None else dict(newest[k], transactionId=tx["transactionId"]))
        return out

    def answer(self, user, t):
        chains = {}
        for tx in self.purchases():
            if tx["originalTransactionId"] in self.linked(user) and tx["purchaseDate"] <= t:
                chains.setdefault(tx["originalTransactionId"], []).append(tx)
        held = {}  # productId -> (state, expires, ownership, since)

        def record(pid, state, expires=None, ownership=None, since=-(2**62)):
            entitled = state in ("active", "grace")
            old = held.get(pid)
            if old is None or (entitled and old[0] not in ("active", "grace")):
                held[pid] = (state, expires, ownership, since)
            elif entitled and old[0] == state:
                exp = max(old[1], expires) if old[1] is not None and expires is not None else old[1]
                own = "PURCHASED" if "PURCHASED" in (old[2], ownership) else old[2]
                held[pid] = (state, exp, own, old[3])
            elif entitled and state == "active":
                held[pid] = (state, expires, ownership, since)
            elif not entitled and old[0] not in ("active", "grace") and since >= old[3]:
                held[pid] = (state, expires, ownership, since)

        intro_txs = {}
        non_renewing = {}
        chain_scope = self.policy.get("refundScope") == "chain"
        for otid in sorted(chains):
            txs = sorted(chains[otid], key=lambda x: (x["purchaseDate"], x["transactionId"]))
            for tx in txs:
                if tx.get("inAppOwnershipType", "PURCHASED") == "PURCHASED" and tx.get("subscriptionGroupIdentifier"):
                    intro_txs.setdefault(tx["subscriptionGroupIdentifier"], []).append(tx)
            kind = txs[0]["type"]
            if kind == "Auto-Renewable Subscription":
                latest = txs[-1]
                for tx in txs:
                    if tx["productId"] != latest["productId"]:
                        record(tx["productId"], "expired")
                renewal = self.renewals.get(otid) or {}
                if self.revoked(latest, t) or (chain_scope and any(self.revoked(x, t) and x["revocationDate"] > latest["purchaseDate"] for x in txs)):
                    status = "revoked"
                elif latest.get("expiresDate") is not None and latest["purchaseDate"] <= t < self.period_end(latest):
                    status = "active"
                elif renewal.get("isInBillingRetryPeriod") or (
                        self.policy.get("graceWithoutRetryFlag") == "grant" and renewal.get("gracePeriodExpiresDate") is not None):
                    grace = renewal.get("gracePeriodExpiresDate")
                    status = "grace" if grace is not None and latest.get("expiresDate") is not None and latest["expiresDate"] <= t < grace else "billing-retry"
                else:
                    status = "expired"
                own = latest.get("inAppOwnershipType", "PURCHASED")
                if status == "active":
                    record(latest["productId"], "active", self.period_end(latest), own, latest["purchaseDate"])
                elif status == "grace":
                    record(latest["productId"], "grace", renewal["gracePeriodExpiresDate"], own, latest["purchaseDate"])
                else:
                    record(latest["productId"], status, since=latest["purchaseDate"])
                if self.policy.get("upgradeDuringIntro") == "union":
                    # An introductory period changed away from runs to its own end, unless a refund voided it.
                    for tx in txs[:-1]:
                        voided = self.revoked(tx, t) or (chain_scope and any(
                            self.revoked(x, t) and x["revocationDate"] > tx["purchaseDate"] for x in txs))
                        end = self.period_end(tx)
                        if tx.get("offerType") == 1 and not voided and end is not None and tx["purchaseDate"] <= t < end:
                            record(tx["productId"], "active", end, tx.get("inAppOwnershipType", "PURCHASED"), tx["purchaseDate"])
            elif kind == "Non-Consumable":
                for tx in txs:
                    ok = not self.revoked(tx, t)
                    record(tx["productId"], "active" if ok else "revoked", None, tx.get("inAppOwnershipType") if ok else None, tx["purchaseDate"])
            elif kind == "Non-Renewing Subscription":
                non_renewing.setdefault(txs[0]["productId"], []).extend(txs)
        for pid in sorted(non_renewing):
            txs = sorted(non_renewing[pid], key=lambda x: (x["purchaseDate"], x["transactionId"]))
            last_end = None
            for tx in txs:
                start = max(tx["purchaseDate"], last_end) if self.policy.get("nonRenewingStacking") and last_end else tx["purchaseDate"]
                end = add_period(start, self.products[pid]["period"])
                last_end = end
                if not self.revoked(tx, t) and start <= t < end:
                    record(pid, "active", end, tx.get("inAppOwnershipType"), tx["purchaseDate"])
            if held.get(pid, ("expired",))[0] not in ("active", "grace"):
                held[pid] = ("revoked" if self.revoked(txs[-1], t) else "expired", None, None, txs[-1]["purchaseDate"])

        products = []
        for pid, (state, expires, own, _) in sorted(held.items()):
            entitled = state in ("active", "grace")
            products.append({"productId": pid, "active": entitled, "state": state,
                             "expiresDate": expires if entitled else None, "ownership": own if entitled else None})
        groups = []
        for g in self.groups:
            active = [p for p in products if p["active"] and self.products.get(p["productId"], {}).get("groupId") == g]
            best = min(active, key=lambda p: (self.products[p["productId"]].get("level", 1 << 30), p["productId"]), default=None)
            own = intro_txs.get(g, [])
            if self.policy.get("introEligibility") == "never-subscribed":
                eligible = not own
            else:
                eligible = not any(x.get("offerType") == 1 for x in own)
            groups.append({"groupId": g, "effectiveProductId": best["productId"] if best else None, "introEligible": eligible})
        balances = {}
        clawback = self.policy.get("consumableClawback", True)
        share = self.policy.get("consumableRefundShare", "all") == "share"
        for tx in self.transactions.values():
            if tx["type"] == "Consumable" and tx["purchaseDate"] <= t and tx["originalTransactionId"] in self.linked(user):
                units = max(tx.get("quantity", 1), 0)
                if clawback and self.revoked(tx, t):
                    # One revocationPercentage covers every unit; under "share" only the refunded share goes back.
                    pct = min(max(tx.get("revocationPercentage", 100000), 0), 100000)
                    units -= units * pct // 100000 if share else units
                # Balances stop at 2^63 - 1, as docs/answers.md says (absurd quantities only).
                balances[tx["productId"]] = min(balances.get(tx["productId"], 0) + units, 2**63 - 1)
        return {"products": products, "groups": groups,
                "consumables": [{"productId": k, "balance": v} for k, v in sorted(balances.items())]}


def add_period(start_ms, period):
    """ISO 8601 period (P1M, P3M, P1Y, P2W, P7D) added on the UTC calendar, months clamped to the month's end."""
    import calendar
    import datetime
    n, unit = int(period[1:-1]), period[-1]
    dt = datetime.datetime.fromtimestamp(start_ms / 1000, tz=datetime.timezone.utc)
    if unit in "DW":
        dt += datetime.timedelta(days=n * (7 if unit == "W" else 1))
    else:
        months = n * (12 if unit == "Y" else 1)
        y, m = divmod(dt.month - 1 + months, 12)
        year, month = dt.year + y, m + 1
        dt = dt.replace(year=year, month=month, day=min(dt.day, calendar.monthrange(year, month)[1]))
    return int(round(dt.timestamp() * 1000))


def legacy_facts(body, products):
    """A verifyReceipt body as transactions and renewal info (the same reading as iapcheck's reference)."""
    r = json.loads(body)
    if r.get("status") != 0 or not r.get("receipt"):
        raise ValueError("verifyReceipt status %s" % r.get("status"))
    receipt = r["receipt"]
    env = "Production" if r.get("environment") == "Production" else "Sandbox"
    when = int(receipt["request_date_ms"])
    types = {"auto-renewable": "Auto-Renewable Subscription", "non-consumable": "Non-Consumable",
             "consumable": "Consumable", "non-renewing": "Non-Renewing Subscription"}
    txs, renewals = [], []
    for e in (r.get("latest_receipt_info") or []) + receipt.get("in_app", []):
        p = products.get(e["product_id"])
        if not p:
            continue
        tx = {"transactionId": e["transaction_id"], "originalTransactionId": e["original_transaction_id"],
              "webOrderLineItemId": e.get("web_order_line_item_id"), "productId": e["product_id"], "type": types[p["kind"]], "purchaseDate": int(e["purchase_date_ms"]),
              "quantity": int(e.get("quantity", "1")), "signedDate": when, "environment": env,
              "bundleId": receipt["bundle_id"], "inAppOwnershipType": e.get("in_app_ownership_type", "PURCHASED"),
              "subscriptionGroupIdentifier": e.get("subscription_group_identifier"), "appAccountToken": e.get("app_account_token")}
        if e.get("expires_date_ms"):
            tx["expiresDate"] = int(e["expires_date_ms"])
        if e.get("is_upgraded") == "true":
            tx["isUpgraded"] = True
        elif e.get("cancellation_date_ms"):
            tx["revocationDate"] = int(e["cancellation_date_ms"])
        if e.get("is_trial_period") == "true" or e.get("is_in_intro_offer_period") == "true":
            tx["offerType"] = 1
        elif e.get("promotional_offer_id"):
            tx["offerType"] = 2
        elif e.get("offer_code_ref_name"):
            tx["offerType"] = 3
        txs.append(tx)
    for p in r.get("pending_renewal_info") or []:
        renewal = {"originalTransactionId": p["original_transaction_id"], "productId": p["product_id"],
                   "signedDate": when, "isInBillingRetryPeriod": p.get("is_in_billing_retry_period") == "1"}
        if p.get("grace_period_expires_date_ms"):
            renewal["gracePeriodExpiresDate"] = int(p["grace_period_expires_date_ms"])
        renewals.append(renewal)
    return receipt["bundle_id"], env, txs, renewals


# ---------------------------------------------------------------------------------------------- the protocol


class Validator:
    def __init__(self):
        self.verification = None
        self.state = None

    def deliver(self, d):
        v, s = self.verification, self.state
        if "appTransaction" in d:
            a = d["appTransaction"]
            tx = v.transaction(a["signedTransaction"])
            s.store_tx(tx)
            s.link(tx["originalTransactionId"], a["userId"])
        elif "notification" in d:
            body, tx, renewal = v.notification(d["notification"]["signedPayload"])
            if body["notificationUUID"] in s.seen_uuids:
                return True, None
            s.seen_uuids.add(body["notificationUUID"])
            if tx:
                s.store_tx(tx)
            if renewal:
                s.store_renewal(renewal)
        elif "apiSnapshot" in d:
            a = d["apiSnapshot"]
            txs, renewals = [], []
            for page in a.get("history", []):
                if page["bundleId"] != v.bundle_id or page["environment"] != v.environment:
                    return False, "history page for another app or environment"
                txs += [v.transaction(j) for j in page["signedTransactions"]]
            statuses = a.get("statuses")
            if statuses:
                if statuses["bundleId"] != v.bundle_id or statuses["environment"] != v.environment:
                    return False, "statuses for another app or environment"
                for group in statuses["data"]:
                    for item in group["lastTransactions"]:
                        renewals.append(v.renewal(item["signedRenewalInfo"]))
            for tx in txs:
                s.store_tx(tx)
            for r in renewals:
                s.store_renewal(r)
        elif "legacyReceipt" in d:
            a = d["legacyReceipt"]
            bundle, env, txs, renewals = legacy_facts(a["responseBody"], s.products)
            if bundle != v.bundle_id or env != v.environment:
                return False, "receipt for another app or environment"
            for tx in txs:
                s.store_tx(tx)
                s.link(tx["originalTransactionId"], a["userId"])
            for r in renewals:
                s.store_renewal(r)
        else:
            return False, "unknown delivery"
        return True, None

    def handle(self, req):
        kind, reply = req.get("type"), {"id": req.get("id", -1)}
        if kind == "hello":
            reply.update(type="hello", name="apple-app-store-server-library-python", protocol=1,
                         capabilities=["app-transaction", "notification", "api-snapshot", "legacy-receipt"])
        elif kind == "reset":
            self.verification = Verification(req["config"])
            self.state = Entitlements(req["config"])
            reply["type"] = "ok"
        elif kind == "deliver":
            try:
                ok, reason = self.deliver(req["delivery"])
            except Exception as e:  # the library's VerificationException, or a payload that does not decode
                ok, reason = False, "%s: %s" % (type(e).__name__, getattr(e, "status", e))
            reply.update(type="verdict", accepted=ok)
            if reason:
                reply["reason"] = str(reason)
        elif kind == "query":
            q = req["query"]
            reply.update(type="answer", answer=self.state.answer(q["userId"], q["at"]))
        else:
            reply.update(type="error", code="unknown-message", message="unknown message type %r" % kind)
        return reply


def main():
    validator = Validator()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = validator.handle(json.loads(line))
        except Exception as e:
            reply = {"id": -1, "type": "error", "code": "bad-request", "message": str(e)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
