"""Acme Notes: the subscription service, between the HTTP layer and the store.

It verifies what arrives (verification.py), keeps the facts (storage.py) and answers access questions with the
pure rules of access.py. It never reads a clock: every call gets `now` (epoch ms) from its caller, the HTTP layer
passing the wall clock.
"""
import hashlib
import json

import access
from storage import CONFLICT, DUPLICATE, STORED  # noqa: F401  (re-exported for callers)
from verification import Rejected

BUGS = ("ignore-refunds", "keep-refunded-credits")
MAX_USER_ID_LENGTH = 256


def check_user_id(user_id):
    if not isinstance(user_id, str) or not user_id.strip():
        raise ValueError("user: missing or empty")
    if len(user_id) > MAX_USER_ID_LENGTH:
        raise ValueError("user: longer than %d characters" % MAX_USER_ID_LENGTH)
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in user_id):
        raise ValueError("user: control characters")
    return user_id


def _require_ids(tx):
    for key in ("transactionId", "originalTransactionId"):
        value = tx.get(key)
        if not isinstance(value, (str, int)) or isinstance(value, bool) or str(value) == "":
            raise Rejected("invalid-transaction", "no %s" % key)
    return tx


def _fingerprint(envelope, tx, info):
    """What a notification says, independent of how its JWS were encoded or signed: Apple's retry of it has the
    same fingerprint, a replay of its UUID with other content has another."""
    content = dict(envelope)
    if isinstance(content.get("data"), dict):
        data = dict(content["data"])
        data.pop("signedTransactionInfo", None)
        data.pop("signedRenewalInfo", None)
        data["transaction"], data["renewalInfo"] = tx, info
        content["data"] = data
    raw = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(raw.encode()).hexdigest()


class NotesService:
    def __init__(self, store, verifier, catalog, bug=None):
        if bug is not None and bug not in BUGS:
            raise ValueError("unknown bug %r (known: %s)" % (bug, ", ".join(BUGS)))
        self.store, self.verifier, self.catalog, self.bug = store, verifier, catalog, bug

    def submit_purchase(self, user_id, signed_transaction, now):
        """A StoreKit 2 transaction the app got, for our user `user_id`. Raises ValueError for a malformed call,
        Rejected for a transaction we refuse."""
        check_user_id(user_id)
        tx = _require_ids(self.verifier.transaction(signed_transaction))
        self.store.save_purchase(user_id, tx, now)
        return tx

    def receive_notification(self, signed_payload, now):
        """An App Store Server Notification V2: STORED, DUPLICATE or CONFLICT. Raises Rejected when it does not
        verify or is not for this app. The type and subtype are recorded but decide nothing: only the signed
        transaction and renewal info inside count."""
        envelope, tx, info = self.verifier.notification(signed_payload)
        if tx is not None:
            _require_ids(tx)
        if info is not None and not info.get("originalTransactionId"):
            raise Rejected("invalid-renewal-info", "no originalTransactionId")
        signed_date = envelope.get("signedDate")
        return self.store.save_notification(
            envelope["notificationUUID"], _fingerprint(envelope, tx, info),
            str(envelope.get("notificationType")) if envelope.get("notificationType") is not None else None,
            str(envelope.get("subtype")) if envelope.get("subtype") is not None else None,
            signed_date if isinstance(signed_date, int) and not isinstance(signed_date, bool) else None,
            tx, info, now)

    def credits(self, user_id, now):
        """The user's credit balances at `now`: [{"product", "balance"}]."""
        check_user_id(user_id)
        transactions, _ = self.store.facts_for_user(user_id)
        return access.credit_balances(self.catalog, transactions, now,
                                      claw_back=self.bug != "keep-refunded-credits")

    def access(self, user_id, now):
        """Every feature of the catalog for `user_id` at `now`: [{"name", "active", "expires" (ms or None)}]."""
        check_user_id(user_id)
        transactions, renewal_infos = self.store.facts_for_user(user_id)
        return access.feature_access(self.catalog, transactions, renewal_infos, now,
                                     honour_refunds=self.bug != "ignore-refunds")
