"""Acme Notes: who may use which feature, and until when.

Pure functions over verified App Store facts. Nothing here reads a clock, a database or the network: the caller
passes the facts it has stored (the newest signed version of each transaction and renewal info of one user) and
the instant `now` (epoch milliseconds, UTC) it wants the answer for.

The rules (Apple's field semantics; see the README for the readings this backend chose where Apple is vague):

* A transaction exists from its `purchaseDate` on.
* Auto-renewable subscription: a transaction grants `[purchaseDate, expiresDate)`. It grants nothing from its
  `revocationDate` on (refund, Family Sharing revoke). An immediate upgrade or crossgrade ends it early: a later
  `PURCHASE` transaction of the same chain that starts inside its period cuts it at that start. A transaction
  flagged `isUpgraded` whose upgrade we have not seen yet grants nothing from the moment that flag was signed.
* Billing grace period: while the chain's renewal info carries a `gracePeriodExpiresDate`, the product of the
  chain's latest transaction stays unlocked from that transaction's `expiresDate` to the grace date (unless the
  transaction was refunded). Billing retry without a grace date unlocks nothing.
* Non-consumable (lifetime): unlocked, forever, unless revoked.
* Non-renewing subscription (a "pass"): `[purchaseDate, purchaseDate + duration)` in calendar terms, UTC, the
  duration coming from our catalog (Apple's transaction has no expiry for it); nothing once revoked.
* One purchase can be known under several transactionIds (restore, second device, re-grant): a billing period is
  identified by its `webOrderLineItemId`, a non-consumable purchase by its `originalTransactionId`; what was signed
  last under any of its ids holds for the purchase.
* A feature is active when one of its products is; it expires with the latest of them, never when one of them is
  a lifetime purchase.
"""
import calendar
import datetime
import json
import re

AUTO_RENEWABLE = "Auto-Renewable Subscription"
NON_CONSUMABLE = "Non-Consumable"
NON_RENEWING = "Non-Renewing Subscription"
CONSUMABLE = "Consumable"

PRODUCT_KINDS = ("subscription", "lifetime", "pass", "credits")
_DURATION = re.compile(r"^P([1-9][0-9]{0,3})([YMWD])$")


class CatalogError(ValueError):
    pass


def parse_duration(text):
    """'P3M' -> (3, 'M'). Only the single-unit durations App Store Connect offers."""
    m = _DURATION.match(text or "")
    if not m:
        raise CatalogError("duration %r: expected P<n>Y, P<n>M, P<n>W or P<n>D" % (text,))
    return int(m.group(1)), m.group(2)


def add_duration(start_ms, duration):
    """`start_ms` plus a duration on the UTC calendar: P1M from 31 January ends on the last day of February at
    the same time of day. Milliseconds are kept exactly (no float round trip)."""
    n, unit = duration if isinstance(duration, tuple) else parse_duration(duration)
    seconds, millis = divmod(int(start_ms), 1000)
    dt = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    if unit in "WD":
        dt += datetime.timedelta(days=n * (7 if unit == "W" else 1))
    else:
        months = n * (12 if unit == "Y" else 1)
        y, m = divmod(dt.month - 1 + months, 12)
        year, month = dt.year + y, m + 1
        dt = dt.replace(year=year, month=month, day=min(dt.day, calendar.monthrange(year, month)[1]))
    return calendar.timegm(dt.utctimetuple()) * 1000 + millis


class Catalog:
    """Our product table (catalog.json): which product unlocks which feature, and how long a pass lasts."""

    def __init__(self, features, products):
        self.features = features  # name -> [productId]
        self.products = products  # productId -> {"kind": ..., "duration": (n, unit) for passes}

    @classmethod
    def load(cls, path):
        with open(path, "rb") as f:
            try:
                raw = json.load(f)
            except ValueError as e:
                raise CatalogError("%s: not JSON: %s" % (path, e))
        return cls.from_json(raw, path)

    @classmethod
    def from_json(cls, raw, name="catalog"):
        problems = []
        if not isinstance(raw, dict):
            raise CatalogError("%s: expected an object" % name)
        products = {}
        for pid, spec in (raw.get("products") or {}).items():
            if not isinstance(spec, dict) or spec.get("kind") not in PRODUCT_KINDS:
                problems.append("products.%s.kind: one of %s" % (pid, ", ".join(PRODUCT_KINDS)))
                continue
            entry = {"kind": spec["kind"]}
            if spec["kind"] == "credits":
                amount = spec.get("amount", 1)
                if not isinstance(amount, int) or isinstance(amount, bool) or amount < 1:
                    problems.append("products.%s.amount: a whole number of credits, at least 1" % pid)
                entry["amount"] = amount
            if spec["kind"] == "pass":
                try:
                    entry["duration"] = parse_duration(spec.get("duration"))
                except CatalogError as e:
                    problems.append("products.%s.duration: %s" % (pid, e))
            products[pid] = entry
        features = {}
        raw_features = raw.get("features")
        if not isinstance(raw_features, dict) or not raw_features:
            problems.append("features: expected an object of feature name -> [productId]")
            raw_features = {}
        for name_, pids in raw_features.items():
            if not isinstance(pids, list) or not all(isinstance(p, str) for p in pids):
                problems.append("features.%s: expected a list of product ids" % name_)
                continue
            for pid in pids:
                if pid not in products:
                    problems.append("features.%s: unknown product %s" % (name_, pid))
                elif products[pid]["kind"] == "credits":
                    problems.append("features.%s: %s is a consumable and unlocks nothing" % (name_, pid))
            features[name_] = list(pids)
        if problems:
            raise CatalogError("%s: %s" % (name, "; ".join(problems)))
        return cls(features, products)

    def pass_duration(self, product_id):
        spec = self.products.get(product_id)
        return spec.get("duration") if spec and spec["kind"] == "pass" else None


def ms(value):
    """An epoch-millisecond field as an int, or None when absent or unusable."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value:
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _revoked(tx, now, honour_refunds=True):
    rv = ms(tx.get("revocationDate"))
    return honour_refunds and rv is not None and rv <= now


def _purchase_key(tx):
    """The purchase a transaction belongs to: one billing period (its webOrderLineItemId) of an auto-renewable
    chain, one non-consumable purchase (its chain), else the transaction itself."""
    kind, otid = tx.get("type"), tx.get("originalTransactionId")
    if kind == AUTO_RENEWABLE and tx.get("webOrderLineItemId"):
        return ("period", otid, str(tx["webOrderLineItemId"]))
    if kind == NON_CONSUMABLE:
        return ("lifetime", otid)
    return ("transaction", tx.get("transactionId"))


def merge_purchases(transactions):
    """One record per purchase: the version signed last under any of its transactionIds. Transactions without a
    usable purchaseDate are dropped (they cannot grant anything)."""
    best = {}
    for tx in transactions:
        if ms(tx.get("purchaseDate")) is None or not tx.get("originalTransactionId"):
            continue
        key = _purchase_key(tx)
        old = best.get(key)
        if old is None or (ms(tx.get("signedDate")) or 0) > (ms(old.get("signedDate")) or 0):
            best[key] = tx
    return sorted(best.values(), key=lambda tx: (ms(tx["purchaseDate"]), str(tx.get("transactionId"))))


def _subscription_end(tx, chain):
    """When an auto-renewable transaction stops granting, revocation aside: its expiresDate, or earlier when an
    immediate upgrade or crossgrade (a later PURCHASE of the chain starting inside the period) replaced it."""
    start, expires = ms(tx["purchaseDate"]), ms(tx.get("expiresDate"))
    cuts = [ms(y["purchaseDate"]) for y in chain
            if y.get("type") == AUTO_RENEWABLE and y.get("transactionReason") == "PURCHASE"
            and start < ms(y["purchaseDate"]) < expires]
    if cuts:
        return min(cuts)
    if tx.get("isUpgraded") is True:
        # Upgraded, but the new product's transaction has not reached us yet: it happened before this flag was
        # signed, at the latest.
        signed = ms(tx.get("signedDate"))
        if signed is not None:
            return min(expires, signed)
    return expires


def product_access(catalog, transactions, renewal_infos, now, honour_refunds=True):
    """productId -> expiry (epoch ms; None = never) of every product the user may use at `now`.

    `transactions`: the newest signed version of every transaction of the chains linked to the user (any order);
    `renewal_infos`: originalTransactionId -> the newest signed renewal info of that chain.
    `honour_refunds=False` is the deliberate `ignore-refunds` bug of the demo build."""
    purchases = merge_purchases(transactions)
    chains = {}
    for tx in purchases:
        chains.setdefault(tx["originalTransactionId"], []).append(tx)

    paid, grace = {}, {}  # productId -> [expiry]
    for otid, chain in chains.items():
        for tx in chain:
            pid, kind, start = tx.get("productId"), tx.get("type"), ms(tx["purchaseDate"])
            if start > now or _revoked(tx, now, honour_refunds):
                continue
            if kind == NON_CONSUMABLE:
                paid.setdefault(pid, []).append(None)
            elif kind == AUTO_RENEWABLE and ms(tx.get("expiresDate")) is not None:
                if now < _subscription_end(tx, chain):
                    paid.setdefault(pid, []).append(ms(tx["expiresDate"]))
            elif kind == NON_RENEWING:
                duration = catalog.pass_duration(pid)
                if duration is not None:
                    end = add_duration(start, duration)
                    if now < end:
                        paid.setdefault(pid, []).append(end)

        # Billing grace period, after the latest period of the chain that has started.
        started = [tx for tx in chain if tx.get("type") == AUTO_RENEWABLE and ms(tx["purchaseDate"]) <= now]
        info = renewal_infos.get(otid) or {}
        grace_until = ms(info.get("gracePeriodExpiresDate"))
        if started and grace_until is not None:
            latest = started[-1]
            expires = ms(latest.get("expiresDate"))
            if expires is not None and expires <= now < grace_until and not _revoked(latest, now, honour_refunds):
                grace.setdefault(latest.get("productId"), []).append(grace_until)

    access = {}
    for pid in set(paid) | set(grace):
        ends = paid.get(pid) or grace[pid]  # a paid period outranks grace: it says when the product expires
        access[pid] = None if None in ends else max(ends)
    return access


def credit_balances(catalog, transactions, now, claw_back=True):
    """Every credits product of the catalog: {"product", "balance"}, the credits the user's consumable purchases at
    or before `now` added (each unit of `quantity` is the product's `amount`), less those of purchases refunded by
    then. `claw_back=False` is the deliberate `keep-refunded-credits` bug of the demo build."""
    balances = {pid: 0 for pid, spec in catalog.products.items() if spec["kind"] == "credits"}
    for tx in merge_purchases(transactions):
        pid = tx.get("productId")
        if tx.get("type") != CONSUMABLE or pid not in balances or ms(tx["purchaseDate"]) > now:
            continue
        if _revoked(tx, now, claw_back):
            continue
        quantity = tx.get("quantity") if isinstance(tx.get("quantity"), int) and tx.get("quantity") > 0 else 1
        balances[pid] += quantity * catalog.products[pid]["amount"]
    return [{"product": pid, "balance": n} for pid, n in sorted(balances.items())]


def feature_access(catalog, transactions, renewal_infos, now, honour_refunds=True):
    """Every feature of the catalog, in catalog order: {"name", "active", "expires"} with `expires` in epoch ms,
    None when the feature is inactive or never expires (a lifetime purchase unlocks it)."""
    products = product_access(catalog, transactions, renewal_infos, now, honour_refunds)
    result = []
    for name, pids in catalog.features.items():
        ends = [products[p] for p in pids if p in products]
        active = bool(ends)
        expires = max(ends) if active and None not in ends else None
        result.append({"name": name, "active": active, "expires": expires})
    return result
