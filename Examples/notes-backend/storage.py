"""Acme Notes: the subscription store (SQLite).

What we keep, all of it verified before it gets here:

* `transactions`: the newest signed version (largest `signedDate`) of every transaction, by transactionId, with
  the raw payload; an older or equal version arriving later changes nothing.
* `renewal_infos`: the newest signed renewal info of every subscription chain (originalTransactionId).
* `chain_owners`: which of our users a chain belongs to: the user the app first submitted one of its transactions
  for. (A chain whose transaction carries our user id as `appAccountToken` belongs to that user too; that is read
  from `transactions`.)
* `notifications`: every App Store Server Notification taken, by notificationUUID, with a fingerprint of its
  content so that Apple's retries are recognised and a replay with other content is refused.

One connection, serialised by a lock: the service is small, and SQLite writes are serial anyway. Every write is
one SQL transaction, committed before the HTTP answer goes out.
"""
import json
import sqlite3
import threading

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS transactions (
    transaction_id TEXT PRIMARY KEY,
    original_transaction_id TEXT NOT NULL,
    product_id TEXT,
    app_account_token TEXT,
    signed_date INTEGER NOT NULL,
    payload TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS transactions_by_chain ON transactions (original_transaction_id);
CREATE INDEX IF NOT EXISTS transactions_by_token ON transactions (app_account_token);
CREATE TABLE IF NOT EXISTS renewal_infos (
    original_transaction_id TEXT PRIMARY KEY,
    signed_date INTEGER NOT NULL,
    payload TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chain_owners (
    original_transaction_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    linked_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS chain_owners_by_user ON chain_owners (user_id);
CREATE TABLE IF NOT EXISTS notifications (
    notification_uuid TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    notification_type TEXT,
    subtype TEXT,
    signed_date INTEGER,
    received_at INTEGER NOT NULL
);
"""

STORED, DUPLICATE, CONFLICT = "stored", "duplicate", "conflict"


def _int(value, default=0):
    if isinstance(value, bool) or value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


class Store:
    def __init__(self, path):
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA foreign_keys = ON")
        if path != ":memory:":
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = FULL")
        with self._lock:
            self._db.executescript(SCHEMA)
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                self._db.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) != SCHEMA_VERSION:
                raise RuntimeError("database schema version %s, this build needs %d" % (row[0], SCHEMA_VERSION))

    def close(self):
        with self._lock:
            self._db.close()

    # Writes -----------------------------------------------------------------------------------------------------

    def _write(self, fn):
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                result = fn(self._db)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return result

    @staticmethod
    def _upsert_transaction(db, tx, received_at):
        token = tx.get("appAccountToken")
        db.execute(
            """INSERT INTO transactions (transaction_id, original_transaction_id, product_id, app_account_token,
                                         signed_date, payload, updated_at)
               VALUES (?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT (transaction_id) DO UPDATE SET
                   original_transaction_id = excluded.original_transaction_id, product_id = excluded.product_id,
                   app_account_token = excluded.app_account_token, signed_date = excluded.signed_date,
                   payload = excluded.payload, updated_at = excluded.updated_at
               WHERE excluded.signed_date > transactions.signed_date""",
            (str(tx["transactionId"]), str(tx["originalTransactionId"]), tx.get("productId"),
             token if isinstance(token, str) else None, _int(tx.get("signedDate")),
             json.dumps(tx, sort_keys=True), received_at))

    @staticmethod
    def _upsert_renewal_info(db, info, received_at):
        db.execute(
            """INSERT INTO renewal_infos (original_transaction_id, signed_date, payload, updated_at)
               VALUES (?, ?, ?, ?)
               ON CONFLICT (original_transaction_id) DO UPDATE SET
                   signed_date = excluded.signed_date, payload = excluded.payload, updated_at = excluded.updated_at
               WHERE excluded.signed_date > renewal_infos.signed_date""",
            (str(info["originalTransactionId"]), _int(info.get("signedDate")), json.dumps(info, sort_keys=True),
             received_at))

    def save_purchase(self, user_id, tx, received_at):
        """A transaction the app submitted for `user_id`: kept (if newest) and its chain linked to the user, unless
        the chain already belongs to someone."""
        def write(db):
            self._upsert_transaction(db, tx, received_at)
            db.execute("INSERT OR IGNORE INTO chain_owners (original_transaction_id, user_id, linked_at) "
                       "VALUES (?, ?, ?)", (str(tx["originalTransactionId"]), user_id, received_at))
        self._write(write)

    def save_notification(self, uuid, fingerprint, notification_type, subtype, signed_date, tx, info, received_at):
        """STORED (new: its facts kept), DUPLICATE (seen with the same content: nothing to do) or CONFLICT (seen
        with other content: nothing learned)."""
        def write(db):
            row = db.execute("SELECT fingerprint FROM notifications WHERE notification_uuid = ?", (uuid,)).fetchone()
            if row is not None:
                return DUPLICATE if row[0] == fingerprint else CONFLICT
            db.execute("INSERT INTO notifications (notification_uuid, fingerprint, notification_type, subtype, "
                       "signed_date, received_at) VALUES (?, ?, ?, ?, ?, ?)",
                       (uuid, fingerprint, notification_type, subtype, signed_date, received_at))
            if tx is not None:
                self._upsert_transaction(db, tx, received_at)
            if info is not None:
                self._upsert_renewal_info(db, info, received_at)
            return STORED
        return self._write(write)

    # Reads ------------------------------------------------------------------------------------------------------

    def facts_for_user(self, user_id):
        """(transactions, renewal infos by chain) of every chain that belongs to the user."""
        with self._lock:
            chains = [r[0] for r in self._db.execute(
                """SELECT original_transaction_id FROM chain_owners WHERE user_id = ?
                   UNION SELECT original_transaction_id FROM transactions WHERE app_account_token = ?""",
                (user_id, user_id))]
            transactions, infos = [], {}
            for otid in chains:
                transactions += [json.loads(r[0]) for r in self._db.execute(
                    "SELECT payload FROM transactions WHERE original_transaction_id = ?", (otid,))]
                row = self._db.execute("SELECT payload FROM renewal_infos WHERE original_transaction_id = ?",
                                       (otid,)).fetchone()
                if row is not None:
                    infos[otid] = json.loads(row[0])
            return transactions, infos
