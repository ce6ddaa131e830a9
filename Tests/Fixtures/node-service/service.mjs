// Purchase service of a (fictional) outside team: the app posts its StoreKit 2 transactions, Apple posts App Store
// Server Notifications V2, and the app asks what a customer may use. A TEST FIXTURE for iapcheck's HTTP targets
// (see README.md beside it), written in the team's own conventions, not iapcheck's.
//
//   POST /v2/purchases                      {"user": "...", "jws": "<signed transaction>"}   -> 201 | 422 | 413
//   POST /v2/apple/notifications            {"signedPayload": "..."}                          -> 200 | 422 | 413
//   GET  /v2/customers/:id/access?at=<ms>   -> {"customer", "asOf", "products": [{"sku", "active", "until", "source"}]}
//   POST /v2/test/reset                     {"app": {"catalog": {...}, "policy": {...}}}      -> 200 (test builds only)
//
// Environment: PORT, DATA_DIR (state.json lives there), ROOT_PEM (the root CA to trust instead of Apple Root CA - G3).
// "Now" is the X-Test-Clock header (epoch ms) when present, else the wall clock.
//
// Switches for iapcheck's gate demo: FIXED=1 removes the team's known divergence (REFUND_REVERSED is ignored);
// PLANTED_BUG=no-grace adds a new bug (access ends at expiresDate even during a billing grace period).

import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import crypto, { X509Certificate } from 'node:crypto';

const PORT = Number(process.env.PORT ?? 8700);
const DATA_DIR = process.env.DATA_DIR ?? '.';
const ROOT = new X509Certificate(fs.readFileSync(process.env.ROOT_PEM ?? 'root.pem'));
const FIXED = process.env.FIXED === '1';
const PLANTED_BUG = process.env.PLANTED_BUG ?? '';
const MAX_BODY = 2 * 1024 * 1024;
if (!['', 'no-grace'].includes(PLANTED_BUG)) { console.error(`unknown PLANTED_BUG ${PLANTED_BUG} (known: no-grace)`); process.exit(2); }

class Rejected extends Error {}
const reject = (why) => { throw new Rejected(why); };

// ------------------------------------------------------------------------------------------------ state

const STATE_FILE = path.join(DATA_DIR, 'state.json');
const emptyState = (app = null) => ({ app, transactions: {}, renewals: {}, owners: {}, notifications: {} });
let db = fs.existsSync(STATE_FILE) ? JSON.parse(fs.readFileSync(STATE_FILE, 'utf8')) : emptyState();

function save() {
  const tmp = `${STATE_FILE}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(db));
  fs.renameSync(tmp, STATE_FILE);
}

// ------------------------------------------------------------------------------------------------ JWS verification

const LEAF_OID = '1.2.840.113635.100.6.11.1'; // receipt signing, on the leaf
const WWDR_OID = '1.2.840.113635.100.6.2.1'; // WWDR, on the intermediate
const CRITICAL_OK = new Set(['2.5.29.19', '2.5.29.15', '2.5.29.30']); // basic constraints, key usage, name constraints

// Minimal DER reading, for the certificate extensions node:crypto does not expose.
function tlv(der, at) {
  let len = der[at + 1], p = at + 2;
  if (len & 0x80) { const n = len & 0x7f; len = 0; for (let i = 0; i < n; i++) len = len * 256 + der[p++]; }
  if (p + len > der.length) reject('truncated certificate');
  return { tag: der[at], start: p, end: p + len };
}
function oidString(b) {
  const out = [Math.floor(b[0] / 40), b[0] % 40];
  for (let i = 1, v = 0; i < b.length; i++) { v = v * 128 + (b[i] & 0x7f); if (!(b[i] & 0x80)) { out.push(v); v = 0; } }
  return out.join('.');
}
function extensions(der) { // Map oid -> critical
  const out = new Map();
  const tbs = tlv(der, tlv(der, 0).start);
  for (let p = tbs.start; p < tbs.end;) {
    const field = tlv(der, p); p = field.end;
    if (field.tag !== 0xa3) continue;
    const list = tlv(der, field.start);
    for (let q = list.start; q < list.end;) {
      const ext = tlv(der, q); q = ext.end;
      const oid = tlv(der, ext.start), next = tlv(der, oid.end);
      out.set(oidString(der.subarray(oid.start, oid.end)), next.tag === 0x01 && der[next.start] !== 0);
    }
  }
  return out;
}

const chainCache = new Map(); // JWS header segment -> { key, from, to } or { error }

function checkChain(headerSegment) {
  const header = decodeSegment(headerSegment);
  if (header.alg !== 'ES256') reject(`alg ${header.alg} not allowed`);
  if (!Array.isArray(header.x5c) || header.x5c.length !== 3) reject('x5c must hold leaf, intermediate and root');
  const ders = header.x5c.slice(0, 2).map((c) => {
    if (typeof c !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(c)) reject('x5c entry is not base64');
    return Buffer.from(c, 'base64');
  });
  let leaf, intermediate;
  try { [leaf, intermediate] = ders.map((d) => new X509Certificate(d)); } catch { reject('unreadable certificate'); }
  if (!leaf.checkIssued(intermediate) || !leaf.verify(intermediate.publicKey)) reject('leaf not signed by intermediate');
  if (!intermediate.ca) reject('intermediate is not a CA');
  if (!intermediate.checkIssued(ROOT) || !intermediate.verify(ROOT.publicKey)) reject('chain does not end at our root');
  const [leafExt, interExt] = ders.map(extensions);
  if (!leafExt.has(LEAF_OID)) reject('leaf lacks the receipt-signing OID');
  if (!interExt.has(WWDR_OID)) reject('intermediate lacks the WWDR OID');
  for (const ext of [leafExt, interExt]) {
    for (const [oid, critical] of ext) if (critical && !CRITICAL_OK.has(oid)) reject(`critical extension ${oid}`);
  }
  if (leaf.publicKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1') reject('leaf key is not P-256');
  const certs = [leaf, intermediate, ROOT];
  return {
    key: leaf.publicKey,
    from: Math.max(...certs.map((c) => Date.parse(c.validFrom))),
    to: Math.min(...certs.map((c) => Date.parse(c.validTo))),
  };
}

function decodeSegment(s) {
  if (!/^[A-Za-z0-9_-]+$/.test(s)) reject('segment is not base64url');
  let v;
  try { v = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')); } catch { reject('segment is not JSON'); }
  if (!v || typeof v !== 'object' || Array.isArray(v)) reject('segment is not an object');
  return v;
}

// The payload of a JWS signed by Apple (here: under ROOT_PEM), checked at its own signedDate.
function verifyJWS(token) {
  if (typeof token !== 'string') reject('missing token');
  const [h, p, s, ...rest] = token.split('.');
  if (s === undefined || rest.length) reject('not a JWS');
  const payload = decodeSegment(p);
  if (!chainCache.has(h)) {
    let entry;
    try { entry = checkChain(h); } catch (e) { if (!(e instanceof Rejected)) throw e; entry = { error: e.message }; }
    if (chainCache.size > 500) chainCache.clear();
    chainCache.set(h, entry);
  }
  const chain = chainCache.get(h);
  if (chain.error) reject(chain.error);
  if (!Number.isFinite(payload.signedDate)) reject('no signedDate');
  if (payload.signedDate < chain.from || payload.signedDate > chain.to) reject('certificate not valid at signedDate');
  if (!/^[A-Za-z0-9_-]+$/.test(s)) reject('signature is not base64url');
  const ok = crypto.verify('sha256', Buffer.from(`${h}.${p}`), { key: chain.key, dsaEncoding: 'ieee-p1363' },
    Buffer.from(s, 'base64url'));
  if (!ok) reject('bad signature');
  return payload;
}

// ------------------------------------------------------------------------------------------------ app identity

function app() { return db.app ?? reject('service not configured (POST /v2/test/reset first)'); }

function checkTransaction(tx) {
  const a = app();
  for (const k of ['transactionId', 'originalTransactionId', 'productId']) if (typeof tx[k] !== 'string') reject(`no ${k}`);
  if (!Number.isFinite(tx.purchaseDate)) reject('no purchaseDate');
  if (tx.bundleId !== a.bundleId) reject(`bundle ${tx.bundleId} is not ours`);
  if (tx.environment !== a.environment) reject(`environment ${tx.environment} is not ours`);
  return tx;
}

function checkRenewal(r) {
  if (typeof r.originalTransactionId !== 'string') reject('renewal info without originalTransactionId');
  if (r.environment !== app().environment) reject(`environment ${r.environment} is not ours`);
  return r;
}

function checkNotificationApp(n) {
  const a = app();
  let about = n.data ?? n.summary ?? n.appData;
  if (!about && n.externalPurchaseToken) {
    const t = n.externalPurchaseToken;
    about = { ...t, environment: String(t.externalPurchaseId ?? '').startsWith('SANDBOX') ? 'Sandbox' : 'Production' };
  }
  if (!about) reject('notification names no app');
  if (about.bundleId !== a.bundleId) reject(`bundle ${about.bundleId} is not ours`);
  if (a.environment === 'Production' && about.appAppleId !== a.appAppleId) reject(`app ${about.appAppleId} is not ours`);
  if (about.environment !== a.environment) reject(`environment ${about.environment} is not ours`);
}

// ------------------------------------------------------------------------------------------------ recording facts

function recordTransaction(tx) {
  const old = db.transactions[tx.transactionId];
  if (!old || tx.signedDate > old.signedDate) db.transactions[tx.transactionId] = tx;
}

function recordRenewal(r) {
  const old = db.renewals[r.originalTransactionId];
  if (!old || r.signedDate > old.signedDate) db.renewals[r.originalTransactionId] = r;
}

function purchase(body, now) {
  if (typeof body.user !== 'string' || !body.user) reject('user is required');
  const tx = checkTransaction(verifyJWS(body.jws));
  recordTransaction(tx);
  const owners = (db.owners[tx.originalTransactionId] ??= []);
  if (!owners.includes(body.user)) owners.push(body.user);
  save();
  return { transaction: tx.transactionId, sku: tx.productId, receivedAt: new Date(now).toISOString() };
}

function notification(body, now) {
  const n = verifyJWS(body.signedPayload);
  if (typeof n.notificationUUID !== 'string') reject('no notificationUUID');
  checkNotificationApp(n);
  if (db.notifications[n.notificationUUID]) return { duplicate: true }; // Apple retries; we already have it
  const tx = n.data?.signedTransactionInfo && checkTransaction(verifyJWS(n.data.signedTransactionInfo));
  const renewal = n.data?.signedRenewalInfo && checkRenewal(verifyJWS(n.data.signedRenewalInfo));
  db.notifications[n.notificationUUID] = now;
  // Known divergence (ticket PAY-311): reversed refunds are restored by support, not by this service, so a
  // REFUND_REVERSED changes nothing here; the purchase stays revoked until another version of it arrives.
  const skip = n.notificationType === 'REFUND_REVERSED' && !FIXED;
  if (tx && !skip) recordTransaction(tx);
  if (renewal && !skip) recordRenewal(renewal);
  save();
  return { received: n.notificationType, skipped: skip || undefined };
}

// ------------------------------------------------------------------------------------------------ access

const AUTO = 'Auto-Renewable Subscription', NON_CONSUMABLE = 'Non-Consumable', NON_RENEWING = 'Non-Renewing Subscription';

function addPeriod(start, iso) { // P1W, P3D, P1M, P1Y on the UTC calendar; months clamp to the month's end
  const m = /^P(\d+)([DWMY])$/.exec(iso ?? '');
  if (!m) return start;
  const n = Number(m[1]);
  if (m[2] === 'D' || m[2] === 'W') return start + n * (m[2] === 'W' ? 7 : 1) * 86_400_000;
  const d = new Date(start), months = d.getUTCMonth() + n * (m[2] === 'Y' ? 12 : 1);
  const y = d.getUTCFullYear() + Math.floor(months / 12), mo = months % 12;
  const day = Math.min(d.getUTCDate(), new Date(Date.UTC(y, mo + 1, 0)).getUTCDate());
  return Date.UTC(y, mo, day) + (start % 86_400_000 + 86_400_000) % 86_400_000;
}

// The customer's purchases: chains the app posted for them or that carry their appAccountToken. One purchase known
// under several transaction ids (a restore) counts once, as its newest signed version.
function purchasesOf(customer) {
  const chains = new Set(Object.keys(db.owners).filter((otid) => db.owners[otid].includes(customer)));
  for (const tx of Object.values(db.transactions)) if (tx.appAccountToken === customer) chains.add(tx.originalTransactionId);
  const newest = new Map();
  for (const tx of Object.values(db.transactions)) {
    if (!chains.has(tx.originalTransactionId)) continue;
    const key = tx.type === AUTO && tx.webOrderLineItemId != null ? `${tx.originalTransactionId}/${tx.webOrderLineItemId}`
      : tx.type === NON_CONSUMABLE ? tx.originalTransactionId : tx.transactionId;
    const seen = newest.get(key);
    if (!seen || tx.signedDate > seen.signedDate) newest.set(key, tx);
  }
  return [...newest.values()].sort((a, b) => a.purchaseDate - b.purchaseDate);
}

function access(customer, t) {
  const policy = app().policy ?? {};
  const all = purchasesOf(customer);
  const known = all.filter((x) => x.purchaseDate <= t && x.type !== 'Consumable');
  const grants = new Map(known.map((x) => [x.productId, []])); // sku -> [{ until, own, grace }]
  const grant = (x, until, grace = false) =>
    grants.get(x.productId).push({ until, own: x.inAppOwnershipType !== 'FAMILY_SHARED', grace });
  const revoked = (x) => x.revocationDate != null && x.revocationDate <= t;

  for (const otid of new Set(known.filter((x) => x.type === AUTO).map((x) => x.originalTransactionId))) {
    const chain = all.filter((x) => x.type === AUTO && x.originalTransactionId === otid);
    const mine = chain.filter((x) => x.purchaseDate <= t);
    const voidedBefore = policy.refundScope === 'chain'
      ? Math.max(-Infinity, ...mine.filter(revoked).map((x) => x.revocationDate)) : -Infinity;
    const voided = (x) => revoked(x) || x.purchaseDate < voidedBefore;
    for (const x of mine) {
      if (voided(x)) continue;
      let end = x.expiresDate; // an upgrade (a later PURCHASE inside this period) ends it early
      for (const y of chain) {
        if (y.purchaseDate > x.purchaseDate && y.purchaseDate < end && y.transactionReason === 'PURCHASE') end = y.purchaseDate;
      }
      if (end === x.expiresDate && x.isUpgraded) end = Math.min(end, x.signedDate);
      if (t < end) grant(x, x.expiresDate);
    }
    // Billing grace: from the last period's expiry to gracePeriodExpiresDate while Apple retries.
    const last = mine.at(-1), r = db.renewals[otid];
    const inRetry = r && (r.isInBillingRetryPeriod === true || policy.graceWithoutRetryFlag !== 'deny');
    if (PLANTED_BUG === 'no-grace') continue;
    if (inRetry && !voided(last) && last.expiresDate <= t && t < r.gracePeriodExpiresDate) grant(last, r.gracePeriodExpiresDate, true);
  }
  for (const x of known.filter((y) => y.type === NON_CONSUMABLE)) if (!revoked(x)) grant(x, null);
  const lastEnd = new Map();
  for (const x of known.filter((y) => y.type === NON_RENEWING)) {
    const sku = app().skus[x.productId];
    const start = policy.nonRenewingStacking ? Math.max(x.purchaseDate, lastEnd.get(x.productId) ?? -Infinity) : x.purchaseDate;
    const end = addPeriod(start, sku?.period);
    lastEnd.set(x.productId, end);
    if (!revoked(x) && start <= t && t < end) grant(x, end);
  }

  return [...grants].sort(([a], [b]) => (a < b ? -1 : 1)).map(([sku, gs]) => {
    if (!gs.length) return { sku, active: false, until: null, source: null };
    // While a paid grant (a family share) covers the product, `until` and `source` are the paid grants'; a grace
    // period of the customer's own counts only once none does (our reading: paid-first).
    const paid = gs.filter((g) => !g.grace);
    const counted = paid.length ? paid : gs;
    const until = counted.some((g) => g.until === null) ? null : new Date(Math.max(...counted.map((g) => g.until))).toISOString();
    return { sku, active: true, until, source: counted.some((g) => g.own) ? 'purchase' : 'family' };
  });
}

// ------------------------------------------------------------------------------------------------ HTTP

function reset(body) {
  const c = body?.app?.catalog;
  if (!c || !Array.isArray(c.products)) reject('reset needs {"app": {"catalog": ...}}');
  const skus = Object.fromEntries(c.products.map((p) => [p.id, { kind: p.kind, period: p.period }]));
  db = emptyState({ bundleId: c.bundleId, environment: c.environment, appAppleId: c.appAppleId, skus, policy: body.app.policy ?? {} });
  save();
  return { configured: c.bundleId, skus: Object.keys(skus).length };
}

const send = (res, status, value) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
};

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => { size += c.length; if (size <= MAX_BODY) chunks.push(c); });
    req.on('end', () => resolve(size > MAX_BODY ? null : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://localhost');
  const now = Number(req.headers['x-test-clock'] ?? Date.now());
  try {
    const text = await readBody(req);
    if (text === null) return send(res, 413, { error: 'body too large' });
    const body = req.method === 'POST' ? JSON.parse(text || '{}') : null;
    const who = /^\/v2\/customers\/([^/]+)\/access$/.exec(url.pathname);
    if (req.method === 'POST' && url.pathname === '/v2/purchases') return send(res, 201, purchase(body, now));
    if (req.method === 'POST' && url.pathname === '/v2/apple/notifications') return send(res, 200, notification(body, now));
    if (req.method === 'POST' && url.pathname === '/v2/test/reset') return send(res, 200, reset(body));
    if (req.method === 'GET' && who) {
      const customer = decodeURIComponent(who[1]), at = Number(url.searchParams.get('at') ?? now);
      return send(res, 200, { customer, asOf: new Date(at).toISOString(), products: access(customer, at) });
    }
    send(res, 404, { error: `no route ${req.method} ${url.pathname}` });
  } catch (e) {
    if (e instanceof Rejected) return send(res, 422, { error: e.message });
    if (e instanceof SyntaxError) return send(res, 400, { error: 'body is not JSON' });
    console.error(e);
    send(res, 500, { error: 'internal error' });
  }
});

server.listen(PORT, '127.0.0.1', () => {
  console.log(`purchase service on 127.0.0.1:${PORT}, data ${STATE_FILE}` +
    `${FIXED ? ', FIXED' : ''}${PLANTED_BUG ? `, PLANTED_BUG=${PLANTED_BUG}` : ''}`);
});
