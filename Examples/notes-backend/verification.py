"""Acme Notes: verification of everything the App Store signs, with Apple's app-store-server-library.

Every JWS (a transaction the app sends us, a notification's envelope, and the transaction and renewal info nested
in a notification, each verified on its own) goes through Apple's `SignedDataVerifier` with online checks off, so
certificates are judged at the payload's `signedDate`. On top of the library we add:

* a size cap (the library bounds nothing; a multi-hundred-kilobyte token is never one of Apple's);
* the app identity of a notification whenever it carries an appAppleId (the library compares it in Production
  only);
* nothing else: what is returned is the verified payload as a plain dict with Apple's field names.
"""
import base64
import json
import re

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException

MAX_TOKEN_BYTES = 256 * 1024
ENVIRONMENTS = ("Production", "Sandbox")


class Rejected(Exception):
    """An artifact we refuse. `code` is a short machine-readable word, `detail` says why."""

    def __init__(self, code, detail):
        super().__init__("%s: %s" % (code, detail))
        self.code, self.detail = code, detail


_PEM = re.compile(rb"-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----", re.S)


def load_root_certificates(path):
    """The DER certificates in a file: one DER certificate, or any number of PEM blocks."""
    with open(path, "rb") as f:
        data = f.read()
    if b"-----BEGIN" in data:
        ders = [base64.b64decode(b"".join(block.split())) for block in _PEM.findall(data)]
        if not ders:
            raise ValueError("%s: PEM file without a CERTIFICATE block" % path)
        return ders
    if not data.startswith(b"\x30"):
        raise ValueError("%s: neither a DER nor a PEM certificate" % path)
    return [data]


def _payload(jws):
    """The payload of a compact JWS the library has already verified."""
    segment = jws.split(".")[1]
    body = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    if not isinstance(body, dict):
        raise ValueError("payload is not an object")
    return body


class AppStoreVerifier:
    def __init__(self, root_certificates, environment, bundle_id, app_apple_id=None,
                 max_token_bytes=MAX_TOKEN_BYTES):
        if environment not in ENVIRONMENTS:
            raise ValueError("environment must be one of %s, not %r" % (", ".join(ENVIRONMENTS), environment))
        if not root_certificates:
            raise ValueError("at least one trusted root certificate is needed")
        self.environment, self.bundle_id, self.app_apple_id = environment, bundle_id, app_apple_id
        self.max_token_bytes = max_token_bytes
        self._library = SignedDataVerifier(list(root_certificates), False, Environment(environment), bundle_id,
                                           app_apple_id)

    def _checked(self, what, jws, verify):
        if not isinstance(jws, str) or not jws:
            raise Rejected("invalid-%s" % what, "missing or not a string")
        if len(jws) > self.max_token_bytes:
            raise Rejected("token-too-large", "%s of %d bytes, over the limit of %d" % (
                what, len(jws), self.max_token_bytes))
        try:
            verify(jws)
            return _payload(jws)
        except VerificationException as e:
            status = getattr(e.status, "name", str(e.status))
            if status == "INVALID_APP_IDENTIFIER":
                raise Rejected("wrong-app", "%s is for another app" % what)
            if status == "INVALID_ENVIRONMENT":
                raise Rejected("wrong-environment", "%s is not from the %s environment" % (what, self.environment))
            raise Rejected("invalid-%s" % what, "verification failed: %s" % status)
        except Rejected:
            raise
        except Exception as e:  # a payload the library or we cannot decode
            raise Rejected("invalid-%s" % what, "%s: %s" % (type(e).__name__, e))

    def transaction(self, jws):
        return self._checked("transaction", jws, self._library.verify_and_decode_signed_transaction)

    def renewal_info(self, jws):
        return self._checked("renewal-info", jws, self._library.verify_and_decode_renewal_info)

    def notification(self, signed_payload):
        """(envelope, transaction or None, renewal info or None), all verified; raises Rejected otherwise."""
        body = self._checked("notification", signed_payload, self._library.verify_and_decode_notification)
        if not isinstance(body.get("notificationUUID"), str) or not body["notificationUUID"]:
            raise Rejected("invalid-notification", "no notificationUUID")
        for key in ("data", "summary", "externalPurchaseToken", "appData"):
            part = body.get(key)
            if isinstance(part, dict):
                app_apple_id = part.get("appAppleId")
                if app_apple_id is not None and self.app_apple_id is not None and app_apple_id != self.app_apple_id:
                    raise Rejected("wrong-app", "notification for app %s" % app_apple_id)
                break
        data = body.get("data") if isinstance(body.get("data"), dict) else {}
        tx = self.transaction(data["signedTransactionInfo"]) if data.get("signedTransactionInfo") else None
        info = self.renewal_info(data["signedRenewalInfo"]) if data.get("signedRenewalInfo") else None
        return body, tx, info
