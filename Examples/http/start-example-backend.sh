#!/usr/bin/env bash
# Starts the example backend as Examples/http/example-backend.json expects it: HTTP on 127.0.0.1:8080, the App Store
# (iapcheck's mock, which check/certify/load start on 127.0.0.1:8081) called with the test API key and shared secret.
# Extra arguments are passed on, e.g. --database FILE or --ack-before-persist.
# The backend is a package of its own: build it first with `swift build --package-path Examples/ExampleBackend`.
#   BACKEND=Examples/ExampleBackend/.build/release/iapcheck-example-backend \
#       Examples/http/start-example-backend.sh --database /tmp/b.sqlite
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec "${BACKEND:-$here/../ExampleBackend/.build/debug/iapcheck-example-backend}" --port 8080 --app-store 127.0.0.1:8081 \
    --api-key "$here/SubscriptionKey_IAPCHK0001.p8" --key-id IAPCHK0001 --issuer-id 6f3c2a90-0b1e-4c4e-9a57-1a2b3c4d5e6f \
    --shared-secret iapcheck-example-shared-secret "$@"
