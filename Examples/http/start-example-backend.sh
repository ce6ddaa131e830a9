#!/usr/bin/env bash
# Starts the example backend as Examples/http/example-backend.json expects it: HTTP on 127.0.0.1:8080, the App Store
# (iapcheck's mock, which check/certify/load start on 127.0.0.1:8081) called with the test API key and shared secret.
# Extra arguments are passed on, e.g. --database FILE or --ack-before-persist.
# The backend is a package of its own; build it first:
#   swift build --package-path Examples/ExampleBackend
# The executable is BACKEND or IAPCHECK_EXAMPLE_BACKEND if set, else the newest debug or release build in .build or
# Examples/ExampleBackend/.build (where `iapcheck mutants` and the tests look too), e.g.
#   BACKEND=Examples/ExampleBackend/.build/release/iapcheck-example-backend \
#       Examples/http/start-example-backend.sh --database /tmp/b.sqlite
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
backend="${BACKEND:-${IAPCHECK_EXAMPLE_BACKEND:-}}"
if [ -z "$backend" ]; then
  # The newest of the builds that exist.
  for f in "$root"/.build/{debug,release}/iapcheck-example-backend \
      "$root"/Examples/ExampleBackend/.build/{debug,release}/iapcheck-example-backend; do
    if [ -x "$f" ] && { [ -z "$backend" ] || [ "$f" -nt "$backend" ]; }; then backend=$f; fi
  done
fi
if [ -z "$backend" ] || [ ! -x "$backend" ]; then
  echo "start-example-backend.sh: the example backend is not built${backend:+ ($backend is not an executable)}." >&2
  echo "Build it with: swift build --package-path Examples/ExampleBackend" >&2
  exit 127
fi
exec "$backend" --port 8080 --app-store 127.0.0.1:8081 \
    --api-key "$here/SubscriptionKey_IAPCHK0001.p8" --key-id IAPCHK0001 --issuer-id 6f3c2a90-0b1e-4c4e-9a57-1a2b3c4d5e6f \
    --shared-secret iapcheck-example-shared-secret "$@"
