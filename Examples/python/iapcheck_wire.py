#!/usr/bin/env python3
"""iapcheck_wire: turn your own entitlement logic into an iapcheck validator, on Apple's official library.

iapcheck starts your program and talks to it over stdin/stdout (wire protocol v1, docs/wire-protocol.md). This kit
does everything but your entitlement logic: the protocol loop (`hello`, `reset`, `deliver`, `query`; an `error`
reply to a bad request, never a crash, a flush after every reply), verification of every JWS by Apple's
app-store-server-library (`SignedDataVerifier`, online checks off, the roots of `reset.config.trustedRoots`; a
notification's nested transaction and renewal info are verified separately), the app identity (bundleId,
appAppleId, environment) and notification duplicates (a notificationUUID seen before is acknowledged and nothing is
learned from it, whether it is Apple's retry or a replay with other content). You write a backend: a class built
from `reset.config` at every reset, with three methods that get verified payloads as plain dicts (Apple's field
names), and you declare what you answer and which channels you take facts from:

    import os, sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # iapcheck_wire.py beside this file
    from iapcheck_wire import keep_newest, run

    class Backend:
        def __init__(self, config):                    # config: catalog, policy, trustedRoots
            self.catalog = config["catalog"]
            self.txs, self.owners = {}, {}

        def on_transaction(self, user, tx, now):       # user: the app's user, or None (from a notification)
            keep_newest(self.txs, tx["transactionId"], tx)   # the latest signedDate wins: duplicates are no-ops
            if user is not None:
                self.owners.setdefault(tx["originalTransactionId"], user)

        def on_notification(self, notification, tx, renewal_info, now):
            pass                                       # tx already went to on_transaction; keep renewal_info

        def entitlements(self, user, at):              # naive: iapcheck shows what it misses
            live = {x["productId"] for x in self.txs.values()
                    if user in (self.owners.get(x["originalTransactionId"]), x.get("appAccountToken"))
                    and x["purchaseDate"] <= at < x.get("expiresDate", 2**62)
                    and not x.get("revocationDate", 2**62) <= at}
            return {"entitlements": [{"entitlementId": e["id"], "active": True}
                                     for e in self.catalog.get("entitlements", []) if live & set(e["products"])]}

    if __name__ == "__main__":
        run(Backend, name="my-backend", answers=["entitlements.active"],
            channels=["app-transaction", "notification"])

Then `iapcheck check --catalog my-catalog.json --validator exec:'python3 my_backend.py'`. Raise `Refused(reason)`
in a callback to refuse an artifact (verdict `accepted: false`); any other exception in your code is answered with
an `error` reply (code `internal-error`) and its traceback goes to stderr, which iapcheck shows with the failure.
Tokens over 256 KiB are refused unverified (`max_token_bytes`). The channel `api-snapshot` works too (add a method
`on_renewal_info`, see `run`); legacy receipts are not taken. `Examples/python/apple_validator.py` is a complete
backend (upgrades, grace, refunds, restores, policies).
"""
import base64
import calendar
import datetime
import json
import sys
import traceback

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier

PROTOCOL = 1
# Channel names (hello) and the key each takes in a `deliver` request. Legacy receipts are unsigned JSON that
# Apple's library does not read, so the kit does not take them.
DELIVERY_KEYS = {"app-transaction": "appTransaction", "notification": "notification", "api-snapshot": "apiSnapshot"}
# Tokens longer than this are refused unverified (iapcheck's reference refuses the same).
MAX_TOKEN_BYTES = 256 * 1024
ANSWER_FIELDS = ("products.active", "products.state", "products.expiresDate", "products.ownership",
                 "groups.effectiveProductId", "groups.introEligible", "consumables", "entitlements.active",
                 "entitlements.expiresDate", "entitlements.state", "entitlements.ownership")


class Refused(Exception):
    """Raise it (from a callback, or the kit does) to refuse an artifact: the verdict is `accepted: false` with
    the message as its reason, and the protocol goes on."""


class BadRequest(Exception):
    """A request the protocol does not allow (not an object, a field missing or of the wrong type): answered with
    an `error` reply, code `bad-request`."""


def decode_payload(jws):
    """The payload of a compact JWS as a dict (Apple's field names, unknown fields and values kept). It checks
    nothing: call it only on a JWS the library has verified."""
    segment = jws.split(".")[1]
    payload = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    if not isinstance(payload, dict):
        raise ValueError("JWS payload is not an object")
    return payload


def keep_newest(store, key, payload):
    """Stores `payload` under `key` in the dict `store` unless what is there was signed at the same time or later
    (a larger `signedDate` wins, never the later arrival). Returns whether it was stored."""
    old = store.get(key)
    if old is not None and old.get("signedDate", 0) >= payload.get("signedDate", 0):
        return False
    store[key] = payload
    return True


def add_period(start_ms, period):
    """`start_ms` (epoch ms) plus an ISO 8601 period of one unit (P1M, P3M, P1Y, P2W, P7D) on the UTC calendar,
    a month's day clamped to its end (P1M from 31 January ends on the last day of February): the computed end of
    a non-renewing subscription (docs/answers.md)."""
    n, unit = int(period[1:-1]), period[-1]
    dt = datetime.datetime.fromtimestamp(start_ms / 1000, tz=datetime.timezone.utc)
    if unit in "DW":
        dt += datetime.timedelta(days=n * (7 if unit == "W" else 1))
    else:
        y, m = divmod(dt.month - 1 + n * (12 if unit == "Y" else 1), 12)
        year, month = dt.year + y, m + 1
        dt = dt.replace(year=year, month=month, day=min(dt.day, calendar.monthrange(year, month)[1]))
    return int(round(dt.timestamp() * 1000))


class Verifier:
    """Apple's `SignedDataVerifier` for one `reset.config` (online checks off, `trustedRoots` as the roots, the
    catalog's environment, bundleId and appAppleId), returning verified payloads as dicts."""

    def __init__(self, config, max_token_bytes=MAX_TOKEN_BYTES):
        """Builds the library's verifier from `config` (`reset.config`); tokens longer than `max_token_bytes`
        are refused before the library sees them (None: no limit, as the library)."""
        self.max_token_bytes = max_token_bytes
        cat = config["catalog"]
        self.bundle_id, self.environment = cat["bundleId"], cat["environment"]
        self.app_apple_id = cat.get("appAppleId")
        roots = [base64.b64decode(r) for r in config.get("trustedRoots") or []]
        env = Environment(self.environment)
        self.library = SignedDataVerifier(roots, False, env, self.bundle_id, self.app_apple_id)

    def bounded(self, jws):
        """`jws`, or `Refused` when it is longer than the limit (the library bounds nothing:
        docs/verifiers.md#what-is-left-to-the-application)."""
        if self.max_token_bytes is not None and len(jws) > self.max_token_bytes:
            raise Refused("token of %d bytes, over the limit of %d" % (len(jws), self.max_token_bytes))
        return jws

    def transaction(self, jws):
        """A signed transaction, verified by the library (signature, chain at its signedDate, bundleId,
        environment), as a dict. Raises on anything the library refuses."""
        self.library.verify_and_decode_signed_transaction(self.bounded(jws))
        return decode_payload(jws)

    def renewal_info(self, jws):
        """A signed renewal info, verified by the library (it carries no bundleId: the environment is checked),
        as a dict."""
        self.library.verify_and_decode_renewal_info(self.bounded(jws))
        return decode_payload(jws)

    def check_app(self, what, bundle_id, app_apple_id, environment):
        """Raises `Refused` unless the identity is this app's (an appAppleId is compared whenever present: the
        library compares it only in Production)."""
        if bundle_id != self.bundle_id or environment != self.environment or (
                app_apple_id is not None and app_apple_id != self.app_apple_id):
            raise Refused("%s for another app or environment: %s, %s, %s" % (
                what, bundle_id, app_apple_id, environment))

    def notification(self, signed_payload):
        """The envelope of a notification, verified by the library (which checks the app named in `data`,
        `summary`, `externalPurchaseToken` or `appData`), as a dict. The nested JWS are not verified here:
        see `nested`."""
        self.library.verify_and_decode_notification(self.bounded(signed_payload))
        body = decode_payload(signed_payload)
        for key in ("data", "summary", "externalPurchaseToken", "appData"):
            part = body.get(key)
            if isinstance(part, dict):
                env = part.get("environment")
                if key == "externalPurchaseToken":
                    env = "Sandbox" if str(part.get("externalPurchaseId") or "").startswith("SANDBOX") else "Production"
                self.check_app("notification", part.get("bundleId"), part.get("appAppleId"), env)
                break
        return body

    def nested(self, body):
        """The transaction and renewal info nested in a verified notification's `data`, each verified on its
        own (Apple's library does not do it for you): `(tx, renewal_info)`, either None when absent."""
        data = body.get("data") or {}
        tx = self.transaction(data["signedTransactionInfo"]) if data.get("signedTransactionInfo") else None
        renewal = self.renewal_info(data["signedRenewalInfo"]) if data.get("signedRenewalInfo") else None
        return tx, renewal


def _field(obj, key, kind):
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BadRequest("%s: expected %s" % (key, kind.__name__))
    return value


class Session:
    """One validator process: the protocol state (the backend of the last reset, its verifier, the
    notificationUUIDs seen) and the handling of one request at a time."""

    def __init__(self, backend_factory, name, answers=None, channels=("app-transaction", "notification"),
                 max_token_bytes=MAX_TOKEN_BYTES):
        """`backend_factory(config)` makes a fresh backend at every reset; `answers` (None: protocol v1's
        products, groups and consumables) and `channels` are declared in `hello` (see `run`)."""
        self.max_token_bytes = max_token_bytes
        for c in channels:
            if c not in DELIVERY_KEYS:
                raise ValueError("channel %r: the kit takes %s" % (c, ", ".join(DELIVERY_KEYS)))
        for a in answers or ():
            if a not in ANSWER_FIELDS:
                raise ValueError("answer field %r: known fields are %s" % (a, ", ".join(ANSWER_FIELDS)))
        self.factory, self.name, self.answers, self.channels = backend_factory, name, answers, list(channels)
        self.backend = self.verifier = None
        self.seen_uuids = set()

    def handle_line(self, line):
        """The reply (a dict) to one request line; never raises."""
        try:
            request = json.loads(line)
        except (ValueError, RecursionError) as e:
            return {"id": -1, "type": "error", "code": "bad-request", "message": "not JSON: %s" % e}
        return self.handle(request)

    def handle(self, request):
        """The reply (a dict) to one decoded request; never raises."""
        rid = request.get("id") if isinstance(request, dict) else None
        rid = rid if isinstance(rid, int) and not isinstance(rid, bool) else -1
        try:
            _field(request, "id", int)
            kind = _field(request, "type", str)
            if kind == "hello":
                reply = {"type": "hello", "name": self.name, "protocol": PROTOCOL, "capabilities": self.channels,
                         "channels": self.channels}
                if self.answers is not None:
                    reply["answers"] = list(self.answers)
            elif kind == "reset":
                self.backend, self.seen_uuids = None, set()  # a failed reset leaves none
                config = _field(request, "config", dict)
                _field(config, "catalog", dict)
                try:
                    self.verifier = Verifier(config, self.max_token_bytes)
                except Exception as e:
                    raise BadRequest("config: %s: %s" % (type(e).__name__, e))
                backend = self._call(self.factory, config)
                if "api-snapshot" in self.channels and not hasattr(backend, "on_renewal_info"):
                    raise TypeError("channel api-snapshot needs the backend method on_renewal_info(renewal_info, now)")
                self.backend = backend
                reply = {"type": "ok"}
            elif kind == "deliver":
                delivery = _field(request, "delivery", dict)
                now = request.get("now", 0)
                reply = {"type": "verdict", "accepted": True}
                try:
                    self._deliver(delivery, now)
                except Refused as e:
                    reply.update(accepted=False, reason=str(e))
            elif kind == "query":
                query = _field(request, "query", dict)
                user, at = _field(query, "userId", str), _field(query, "at", int)
                answer = self._call(self._ready().entitlements, user, at)
                if not isinstance(answer, dict):
                    raise TypeError("entitlements() returned %s, not a dict" % type(answer).__name__)
                reply = {"type": "answer", "answer": answer}
            else:
                reply = {"type": "error", "code": "unknown-message", "message": "unknown message type %r" % kind}
        except BadRequest as e:
            reply = {"type": "error", "code": "bad-request", "message": str(e)}
        except _BackendError as e:
            reply = {"type": "error", "code": "internal-error", "message": str(e)}
        except Exception as e:  # a bug of the kit's: reported, never a crash
            traceback.print_exc(file=sys.stderr)
            reply = {"type": "error", "code": "internal-error", "message": "%s: %s" % (type(e).__name__, e)}
        return dict(id=rid, **reply)

    def _ready(self):
        if self.backend is None:
            raise BadRequest("no successful reset yet")
        return self.backend

    def _call(self, fn, *args):
        """Runs user code: `Refused` passes through; anything else becomes an internal error, traceback on stderr."""
        try:
            return fn(*args)
        except Refused:
            raise
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            raise _BackendError("%s raised %s: %s" % (getattr(fn, "__name__", "backend"), type(e).__name__, e))

    def _verified(self, step, *args):
        """Runs a verification step: whatever it raises (the library's VerificationException, a payload that does
        not decode) refuses the artifact."""
        try:
            return step(*args)
        except Refused:
            raise
        except Exception as e:
            raise Refused("%s: %s" % (type(e).__name__, getattr(getattr(e, "status", None), "name", e)))

    def _deliver(self, delivery, now):
        backend, v = self._ready(), self.verifier
        keys = [k for k in ("appTransaction", "notification", "apiSnapshot", "legacyReceipt") if k in delivery]
        if len(keys) != 1 or not isinstance(delivery[keys[0]], dict):
            raise BadRequest("delivery: expected one of appTransaction, notification, apiSnapshot, legacyReceipt")
        key, d = keys[0], delivery[keys[0]]
        if key not in (DELIVERY_KEYS[c] for c in self.channels):
            raise Refused("%s is not a channel this validator declared" % key)
        if key == "appTransaction":
            user, jws = _field(d, "userId", str), _field(d, "signedTransaction", str)
            self._call(backend.on_transaction, user, self._verified(v.transaction, jws), now)
        elif key == "notification":
            body = self._verified(v.notification, _field(d, "signedPayload", str))
            uuid = body.get("notificationUUID")
            if not isinstance(uuid, str):
                raise Refused("notification without notificationUUID")
            if uuid in self.seen_uuids:
                return  # Apple's retry, or a replay with other content: acknowledged, nothing learned
            tx, renewal = self._verified(v.nested, body)
            if tx is not None:
                self._call(backend.on_transaction, None, tx, now)
            self._call(backend.on_notification, body, tx, renewal, now)
            self.seen_uuids.add(uuid)  # only once taken: a notification refused, then retried, is refused again
        else:
            txs, infos = self._verified(self._snapshot, d)
            for tx in txs:
                self._call(backend.on_transaction, None, tx, now)
            for r in infos:
                self._call(backend.on_renewal_info, r, now)

    def _snapshot(self, s):
        """An API answer, all verified before anything is learned: (history transactions, status renewal infos)."""
        v, txs, infos = self.verifier, [], []
        for page in s.get("history") or []:
            v.check_app("history page", page.get("bundleId"), page.get("appAppleId"), page.get("environment"))
            txs += [v.transaction(jws) for jws in page.get("signedTransactions") or []]
        statuses = s.get("statuses")
        if statuses:
            v.check_app("statuses", statuses.get("bundleId"), statuses.get("appAppleId"), statuses.get("environment"))
            for item in (i for g in statuses.get("data") or [] for i in g.get("lastTransactions") or []):
                infos.append(v.renewal_info(item["signedRenewalInfo"]))
                v.transaction(item["signedTransactionInfo"])  # verified too: a forged one refuses the answer
        return txs, infos


class _BackendError(Exception):
    pass


def run(backend_factory, name, answers=None, channels=("app-transaction", "notification"),
        max_token_bytes=MAX_TOKEN_BYTES, stdin=None, stdout=None):
    """Serves iapcheck's wire protocol on stdin/stdout until stdin closes.

    `backend_factory(config)` (a class, say) makes a fresh backend from `reset.config` at every reset. The backend
    has `on_transaction(user_id_or_None, tx, now)`: a verified transaction, with the user for an app submission,
    None for one nested in a notification or (channel api-snapshot) in an API answer; `on_notification(notification,
    tx, renewal_info, now)`: the verified envelope and its nested payloads (None when absent; unknown types,
    subtypes and values are passed on as they are), called after `on_transaction` for its tx, once per
    notificationUUID; `entitlements(user, at)`: the answer dict for instant `at` (docs/answers.md); and, only with
    channel api-snapshot, `on_renewal_info(renewal_info, now)` for each renewal info of an API answer. `now` is the
    validator's clock (epoch ms).

    `answers` are the answer fields declared in `hello` (`ANSWER_FIELDS`; None declares nothing: protocol v1's
    products, groups and consumables); `channels` the channels facts arrive on (`DELIVERY_KEYS`): iapcheck sends
    only those and compares only those fields, and lists not declared may be left out of answers. `name` is shown
    in iapcheck's reports. A token longer than `max_token_bytes` is refused before the library sees it (None: no
    limit, which shows the library's own behaviour: it accepts iapcheck's `oversized-token` forgery).
    """
    session = Session(backend_factory, name, answers, channels, max_token_bytes)
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    for raw in iter(stdin.readline, b""):
        line = raw.decode("utf-8", "replace").strip()
        if not line:
            continue
        reply = session.handle_line(line)
        try:
            out = json.dumps(reply, allow_nan=False)
        except (TypeError, ValueError) as e:
            out = json.dumps({"id": reply.get("id", -1), "type": "error", "code": "internal-error",
                              "message": "reply is not JSON: %s" % e})
        try:
            stdout.write(out.encode() + b"\n")
            stdout.flush()
        except BrokenPipeError:
            return
