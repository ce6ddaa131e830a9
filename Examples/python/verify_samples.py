#!/usr/bin/env python3
"""Verify iapcheck's signed samples with Apple's official Python verifier.

Usage: python3 verify_samples.py DIR   (DIR written by `iapcheck pki sample DIR` or `iapcheck send --dry-run --out DIR`)

Prints one JSON object: {"genuine": {file: "accepted"|error}, "forged": {class: "accepted"|error}}.
Exit status 0 when every genuine sample is accepted.
"""
import json
import os
import sys

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier


def main(directory):
    with open(os.path.join(directory, "samples.json")) as f:
        meta = json.load(f)
    with open(os.path.join(directory, meta["root"]), "rb") as f:
        root = f.read()
    verifier = SignedDataVerifier([root], False, Environment(meta["environment"]), meta["bundleId"], meta["appAppleId"])

    def check(kind, path):
        with open(os.path.join(directory, path)) as f:
            token = f.read().strip()
        try:
            if kind == "transaction":
                verifier.verify_and_decode_signed_transaction(token)
            elif kind == "renewal":
                verifier.verify_and_decode_renewal_info(token)
            else:
                decoded = verifier.verify_and_decode_notification(token)
                # The library does not verify nested JWS for you: do it, as a real backend must.
                if decoded.data and decoded.data.signedTransactionInfo:
                    verifier.verify_and_decode_signed_transaction(decoded.data.signedTransactionInfo)
                if decoded.data and decoded.data.signedRenewalInfo:
                    verifier.verify_and_decode_renewal_info(decoded.data.signedRenewalInfo)
            return "accepted"
        except Exception as e:  # VerificationException and anything the decoder raises
            status = getattr(e, "status", None)
            return "rejected: " + (status.name if status is not None else type(e).__name__)

    # The kind is in the file name's last part: `transaction.jws`, `01-app.transaction.jws`, `renewal.jws`,
    # `02-notification-REFUND.notification.jws` (`iapcheck pki sample`, `iapcheck send --dry-run --out`).
    def kind_of(name):
        for kind in ("transaction", "renewal", "notification"):
            if name.endswith(kind + ".jws"):
                return kind
        raise ValueError("no kind in the name " + name)

    genuine = {name: check(kind_of(name), name) for name in meta["genuine"]}
    forged = {f["class"]: check(f["kind"], f["file"]) for f in meta["forged"]}
    print(json.dumps({"genuine": genuine, "forged": forged}, indent=2, sort_keys=True))
    return 0 if all(v == "accepted" for v in genuine.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
