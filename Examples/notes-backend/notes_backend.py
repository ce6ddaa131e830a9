#!/usr/bin/env python3
"""Acme Notes subscription backend: HTTP layer and configuration.

    python3 notes_backend.py --port 8700 --db /tmp/notes.sqlite --bundle-id com.acme.notes \
        --environment Production --app-apple-id 1234567890 --root-cert AppleRootCA-G3.cer \
        --catalog catalog.json

Routes (see README.md):
    POST /api/v2/purchases              form: user=<our user id>&transaction=<StoreKit 2 JWS>
    POST /apple/notifications/v2        App Store Server Notifications V2: {"signedPayload": "..."}
    GET  /api/v2/users/<user>/access    {"user": ..., "features": [{"name", "active", "expires"}]}
    GET  /healthz                       ok

Listens on 127.0.0.1 only; put a TLS-terminating proxy in front of it.
"""
import argparse
import datetime
import json
import logging
import os
import re
import signal
import sys
import time
import traceback
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from access import Catalog, CatalogError  # noqa: E402
from service import BUGS, CONFLICT, DUPLICATE, NotesService  # noqa: E402
from storage import Store  # noqa: E402
from verification import MAX_TOKEN_BYTES, AppStoreVerifier, Rejected, load_root_certificates  # noqa: E402

MAX_BODY_BYTES = 256 * 1024
ACCESS_PATH = re.compile(r"^/api/v2/users/([^/]+)/access$")
FORM_TYPE = "application/x-www-form-urlencoded"
JSON_TYPE = "application/json"

log = logging.getLogger("notes-backend")


def wall_clock_ms():
    return int(time.time() * 1000)


def iso_seconds(ms):
    """Epoch ms -> '2026-03-31T00:01:00Z', truncated to the second (we store and show seconds)."""
    if ms is None:
        return None
    return datetime.datetime.fromtimestamp(ms // 1000, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class HTTPError(Exception):
    def __init__(self, status, code, detail):
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "AcmeNotesBackend/2"
    service = None  # set by main()

    # Plumbing ---------------------------------------------------------------------------------------------------

    def log_message(self, fmt, *args):  # http.server's own lines: we log one line per request ourselves
        pass

    def _send(self, status, body, content_type=JSON_TYPE):
        data = body if isinstance(body, bytes) else (json.dumps(body) + "\n").encode()
        self._status = status
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _read_body(self, expected_type):
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            raise HTTPError(411, "length-required", "send the body with a Content-Length")
        if length is None:
            self.close_connection = True
            raise HTTPError(411, "length-required", "Content-Length is required")
        try:
            n = int(length)
            if n < 0:
                raise ValueError
        except ValueError:
            self.close_connection = True
            raise HTTPError(400, "bad-request", "bad Content-Length")
        if n > MAX_BODY_BYTES:
            self.close_connection = True  # the body is not read
            raise HTTPError(413, "body-too-large", "body of %d bytes, the limit is %d" % (n, MAX_BODY_BYTES))
        body = self.rfile.read(n)
        if len(body) != n:
            self.close_connection = True
            raise HTTPError(400, "bad-request", "body shorter than its Content-Length")
        if ctype != expected_type:
            raise HTTPError(400, "bad-content-type", "expected %s, got %s" % (expected_type, ctype or "none"))
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            raise HTTPError(400, "bad-request", "body is not UTF-8")

    def _handle(self, route):
        start = time.monotonic()
        self._status, code = 500, ""
        try:
            route()
        except HTTPError as e:
            code = e.code
            self._send(e.status, {"error": {"code": e.code, "detail": e.detail}})
        except Rejected as e:
            code = e.code
            self._send(422, {"error": {"code": e.code, "detail": e.detail}})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            code = "client-gone"
        except Exception as e:
            code = "internal-error"
            traceback.print_exc(file=sys.stderr)
            self.close_connection = True
            try:
                self._send(500, {"error": {"code": "internal-error", "detail": type(e).__name__}})
            except OSError:
                pass
        log.info("%s %s %s %d%s %.1fms", self.client_address[0], self.command, self.path.split("?")[0][:200],
                 self._status, " " + code if code else "", (time.monotonic() - start) * 1000)

    def do_GET(self):
        self._handle(self._route_get)

    def do_HEAD(self):
        self._handle(self._route_get)

    def do_POST(self):
        self._handle(self._route_post)

    def _method_not_allowed(self):
        self._handle(self._not_allowed)

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _method_not_allowed

    def _not_allowed(self):
        raise HTTPError(405, "method-not-allowed", "%s is not allowed here" % self.command)

    # Routes -----------------------------------------------------------------------------------------------------

    def _route_get(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == "/healthz":
            return self._send(200, b"ok\n", "text/plain; charset=utf-8")
        m = ACCESS_PATH.match(path)
        if m:
            try:
                user = urllib.parse.unquote(m.group(1), errors="strict")
            except UnicodeDecodeError:
                raise HTTPError(400, "bad-request", "user id is not UTF-8")
            return self._access(user)
        if path in ("/api/v2/purchases", "/apple/notifications/v2"):
            raise HTTPError(405, "method-not-allowed", "use POST")
        raise HTTPError(404, "not-found", "no route %s" % path)

    def _route_post(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == "/api/v2/purchases":
            return self._purchase()
        if path == "/apple/notifications/v2":
            return self._notification()
        if path == "/healthz" or ACCESS_PATH.match(path):
            raise HTTPError(405, "method-not-allowed", "use GET")
        raise HTTPError(404, "not-found", "no route %s" % path)

    def _purchase(self):
        body = self._read_body(FORM_TYPE)
        try:
            form = urllib.parse.parse_qs(body, keep_blank_values=True, strict_parsing=True, max_num_fields=16)
        except ValueError as e:
            raise HTTPError(400, "bad-request", "form: %s" % e)
        fields = {}
        for name in ("user", "transaction"):
            values = form.get(name) or []
            if len(values) != 1 or not values[0]:
                raise HTTPError(400, "bad-request", "form field %s: expected exactly one non-empty value" % name)
            fields[name] = values[0]
        try:
            self.service.submit_purchase(fields["user"], fields["transaction"], wall_clock_ms())
        except ValueError as e:
            raise HTTPError(400, "bad-request", str(e))
        self._send(201, {"ok": True})

    def _notification(self):
        body = self._read_body(JSON_TYPE)
        try:
            doc = json.loads(body)
        except (ValueError, RecursionError):
            raise HTTPError(400, "bad-request", "body is not JSON")
        if not isinstance(doc, dict) or not isinstance(doc.get("signedPayload"), str) or not doc["signedPayload"]:
            raise HTTPError(400, "bad-request", "expected {\"signedPayload\": \"...\"}")
        outcome = self.service.receive_notification(doc["signedPayload"], wall_clock_ms())
        if outcome == CONFLICT:
            raise HTTPError(409, "notification-conflict",
                            "this notificationUUID was received before with other content")
        self._send(200, {"ok": True, "duplicate": outcome == DUPLICATE})

    def _access(self, user):
        try:
            now = wall_clock_ms()
            features = self.service.access(user, now)
            credits = self.service.credits(user, now)
        except ValueError as e:
            raise HTTPError(400, "bad-request", str(e))
        self._send(200, {"user": user, "features": [
            {"name": f["name"], "active": f["active"], "expires": iso_seconds(f["expires"]) if f["active"] else None}
            for f in features], "credits": credits})


def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description="Acme Notes subscription backend (App Store, StoreKit 2).")
    p.add_argument("--port", type=int, default=8700, help="port on 127.0.0.1 (default 8700)")
    p.add_argument("--db", required=True, help="SQLite database file (created if missing)")
    p.add_argument("--bundle-id", required=True, help="the app's bundle id")
    p.add_argument("--environment", required=True, choices=["Production", "Sandbox"])
    p.add_argument("--app-apple-id", type=int, help="the app's Apple ID (required in Production)")
    p.add_argument("--root-cert", action="append", required=True, metavar="FILE",
                   help="a trusted root certificate, DER or PEM (repeatable); Apple Root CA - G3 in production")
    p.add_argument("--catalog", default=os.path.join(here, "catalog.json"), help="product catalog (catalog.json)")
    p.add_argument("--bug", choices=BUGS, help="plant a deliberate mistake (demonstrations only)")
    p.add_argument("--log-level", default="INFO")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        if args.environment == "Production" and args.app_apple_id is None:
            raise ValueError("--app-apple-id is required with --environment Production")
        catalog = Catalog.load(args.catalog)
        roots = [der for path in args.root_cert for der in load_root_certificates(path)]
        verifier = AppStoreVerifier(roots, args.environment, args.bundle_id, args.app_apple_id, MAX_TOKEN_BYTES)
        store = Store(args.db)
    except (OSError, ValueError, CatalogError, RuntimeError) as e:
        print("notes-backend: configuration error: %s" % e, file=sys.stderr)
        return 2
    Handler.service = NotesService(store, verifier, catalog, bug=args.bug)
    try:
        server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    except OSError as e:
        print("notes-backend: cannot listen on 127.0.0.1:%d: %s" % (args.port, e.strerror or e), file=sys.stderr)
        store.close()
        return 1
    server.daemon_threads = True

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    log.info("listening on http://127.0.0.1:%d (%s, %s, db %s%s)", args.port, args.bundle_id, args.environment,
             args.db, ", BUG " + args.bug if args.bug else "")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        log.info("stopping")
    finally:
        server.server_close()
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
