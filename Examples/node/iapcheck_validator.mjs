#!/usr/bin/env node
// An iapcheck validator in Node.js that answers in entitlements ("is the user pro?"), not per product.
//
// Run it under iapcheck (docs/wire-protocol.md: one JSON request per line on stdin, one reply per line on stdout):
//
//     iapcheck check --catalog Examples/entitlements.json --validator exec:'node Examples/node/iapcheck_validator.mjs'
//     iapcheck certify --validator exec:'node Examples/node/iapcheck_validator.mjs'
//
// Profile declared in its hello: it answers `entitlements.active` and `entitlements.expiresDate` only, and takes
// facts from two channels only, the app's signed transactions and App Store Server Notifications V2:
//
//     {"type":"hello","name":"node-entitlements","protocol":1,
//      "answers":["entitlements.active","entitlements.expiresDate"],"channels":["app-transaction","notification"]}
//
// Node's standard library only (node:crypto, node:readline): no npm packages. Two layers, kept apart:
//   1. Verification (class Verifier): every JWS -- a notification's envelope and, separately, the transaction and
//      renewal info nested in it -- is checked the way Apple's App Store Server Library checks it offline
//      (docs/verifiers.md): ES256, a three-certificate x5c chain leaf -> intermediate -> a configured root, every
//      certificate valid at the payload's signedDate, Apple's OIDs present, no critical extension left unhandled.
//   2. Entitlements (class Facts): verified facts merged (latest signedDate wins), chains linked to users, and the
//      question "what may user U use at instant t?" answered per the catalog's entitlements (docs/answers.md).

import crypto, { X509Certificate } from 'node:crypto';
import readline from 'node:readline';

// ------------------------------------------------------------------------------------------------ DER reading

// The few pieces of a certificate that X509Certificate does not expose: the validity dates as instants and the
// extensions with their critical flags. A tiny DER walker is enough (definite lengths, one-byte tags).
function tlv(buf, off) {
  const tag = buf[off];
  let len = buf[off + 1], p = off + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n < 1 || n > 4) throw new Error('unsupported DER length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[p++];
  }
  if (tag === undefined || p + len > buf.length) throw new Error('truncated DER');
  return { tag, start: p, end: p + len };
}

function children(buf, node) {
  const out = [];
  for (let off = node.start; off < node.end; ) { const c = tlv(buf, off); out.push(c); off = c.end; }
  return out;
}

function oidText(bytes) {
  const parts = [Math.floor(bytes[0] / 40), bytes[0] % 40];
  let v = 0;
  for (const b of bytes.subarray(1)) { v = v * 128 + (b & 0x7f); if (!(b & 0x80)) { parts.push(v); v = 0; } }
  return parts.join('.');
}

// UTCTime (YYMMDDHHMMSSZ) or GeneralizedTime (YYYYMMDDHHMMSSZ) as epoch milliseconds.
function derTime(buf, node) {
  let s = buf.toString('latin1', node.start, node.end);
  if (node.tag === 0x17) s = (Number(s.slice(0, 2)) >= 50 ? '19' : '20') + s;
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) throw new Error('unsupported certificate time ' + s);
  return Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
}

// { notBefore, notAfter, extensions: Map(oid -> critical) } of a DER certificate.
function certDetails(der) {
  const tbs = children(der, children(der, tlv(der, 0))[0]);
  let i = tbs[0].tag === 0xa0 ? 1 : 0; // skip the explicit version
  const validity = children(der, tbs[i + 3]);
  const extensions = new Map();
  for (const part of tbs.slice(i + 6)) {
    if (part.tag !== 0xa3) continue;
    for (const ext of children(der, children(der, part)[0])) {
      const [oid, second] = children(der, ext);
      const critical = second.tag === 0x01 && der[second.start] !== 0;
      extensions.set(oidText(der.subarray(oid.start, oid.end)), critical);
    }
  }
  return { notBefore: derTime(der, validity[0]), notAfter: derTime(der, validity[1]), extensions };
}

// ------------------------------------------------------------------------------------------------ verification

const LEAF_OID = '1.2.840.113635.100.6.11.1'; // Apple's receipt-signing OID, on the leaf
const WWDR_OID = '1.2.840.113635.100.6.2.1'; // Apple's WWDR OID, on the intermediate
const HANDLED_CRITICAL = new Set(['2.5.29.19', '2.5.29.15', '2.5.29.30']); // basic constraints, key usage, name constraints
const MAX_TOKEN_BYTES = 256 * 1024;
const B64URL = /^[A-Za-z0-9_-]*$/;
const B64 = /^[A-Za-z0-9+/]*={0,2}$/;

class Refusal extends Error {}

function b64urlJSON(segment) {
  if (!B64URL.test(segment)) throw new Refusal('segment is not base64url');
  const value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Refusal('segment is not a JSON object');
  return value;
}

class Verifier {
  constructor(trustedRoots) {
    this.roots = [];
    for (const r of trustedRoots) {
      try {
        const der = Buffer.from(r, 'base64');
        this.roots.push({ cert: new X509Certificate(der), details: certDetails(der) });
      } catch { /* an unreadable root trusts nothing */ }
    }
    // Chain verdicts by header segment (the x5c strings): a verdict depends only on those bytes and the roots, so
    // refusals are kept too. Each verdict carries its validity window; dates are checked per token.
    this.chains = new Map();
  }

  chain(headerSegment) {
    let verdict = this.chains.get(headerSegment);
    if (verdict === undefined) {
      try { verdict = this.verifyChain(headerSegment); } catch (e) { verdict = { error: e.message }; }
      if (this.chains.size >= 1024) this.chains.clear();
      this.chains.set(headerSegment, verdict);
    }
    if (verdict.error) throw new Refusal(verdict.error);
    return verdict;
  }

  verifyChain(headerSegment) {
    const header = b64urlJSON(headerSegment);
    if (header.alg !== 'ES256') throw new Refusal(`alg ${header.alg} is not ES256`);
    const x5c = header.x5c;
    if (!Array.isArray(x5c) || x5c.length !== 3) throw new Refusal('x5c must hold exactly three certificates');
    // x5c[2] is never used: the root comes from the trust store only.
    const [leafDer, interDer] = x5c.slice(0, 2).map((s) => {
      if (typeof s !== 'string' || !B64.test(s)) throw new Refusal('x5c entry is not base64');
      return Buffer.from(s, 'base64');
    });
    const leaf = new X509Certificate(leafDer), inter = new X509Certificate(interDer);
    const leafDetails = certDetails(leafDer), interDetails = certDetails(interDer);
    if (!leaf.checkIssued(inter) || !leaf.verify(inter.publicKey)) throw new Refusal('leaf is not issued by the intermediate');
    if (!inter.ca) throw new Refusal('intermediate is not a CA');
    const root = this.roots.find((r) => r.cert.ca && inter.checkIssued(r.cert) && inter.verify(r.cert.publicKey));
    if (!root) throw new Refusal('intermediate is not issued by a trusted root');
    if (!leafDetails.extensions.has(LEAF_OID)) throw new Refusal('leaf lacks the receipt-signing OID');
    if (!interDetails.extensions.has(WWDR_OID)) throw new Refusal('intermediate lacks the WWDR OID');
    for (const [name, d] of [['leaf', leafDetails], ['intermediate', interDetails]]) {
      for (const [oid, critical] of d.extensions) {
        if (critical && !HANDLED_CRITICAL.has(oid)) throw new Refusal(`${name} has an unhandled critical extension ${oid}`);
      }
    }
    const key = leaf.publicKey;
    if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
      throw new Refusal('leaf key is not P-256');
    }
    const all = [leafDetails, interDetails, root.details];
    return { key, notBefore: Math.max(...all.map((d) => d.notBefore)), notAfter: Math.min(...all.map((d) => d.notAfter)) };
  }

  // The verified payload of a JWS, or a Refusal.
  verify(token) {
    if (typeof token !== 'string') throw new Refusal('token is not a string');
    if (Buffer.byteLength(token) > MAX_TOKEN_BYTES) throw new Refusal('token exceeds 256 KiB');
    const parts = token.split('.');
    if (parts.length !== 3) throw new Refusal('a JWS has three segments');
    const payload = b64urlJSON(parts[1]);
    const chain = this.chain(parts[0]);
    const at = payload.signedDate;
    if (!Number.isFinite(at)) throw new Refusal('payload has no numeric signedDate');
    if (at < chain.notBefore || at > chain.notAfter) throw new Refusal('certificate chain not valid at signedDate');
    if (!B64URL.test(parts[2])) throw new Refusal('signature is not base64url');
    const sig = Buffer.from(parts[2], 'base64url');
    if (sig.length !== 64) throw new Refusal('signature is not a 64-byte ES256 signature');
    const ok = crypto.verify('sha256', Buffer.from(parts[0] + '.' + parts[1]),
      { key: chain.key, dsaEncoding: 'ieee-p1363' }, sig);
    if (!ok) throw new Refusal('ES256 signature does not verify');
    return payload;
  }
}

// ------------------------------------------------------------------------------------------------ entitlements

const AUTO = 'Auto-Renewable Subscription', NON_CONSUMABLE = 'Non-Consumable', CONSUMABLE = 'Consumable';
const isDate = (v) => typeof v === 'number' && Number.isFinite(v);
const revokedAt = (tx, t) => isDate(tx.revocationDate) && tx.revocationDate <= t;
const byPurchase = (a, b) => a.purchaseDate - b.purchaseDate || (a.transactionId < b.transactionId ? -1 : a.transactionId > b.transactionId ? 1 : 0);

// start + an ISO 8601 period (P1W, P3D, P1M, P1Y) on the UTC calendar; months clamp to the month's end.
function addPeriod(start, period) {
  const m = /^P(\d+)([DWMY])$/.exec(period ?? '');
  if (!m) return null;
  const n = Number(m[1]), unit = m[2], day = 86400000;
  if (unit === 'D' || unit === 'W') return start + n * (unit === 'W' ? 7 : 1) * day;
  const d = new Date(start), months = d.getUTCMonth() + n * (unit === 'Y' ? 12 : 1);
  const year = d.getUTCFullYear() + Math.floor(months / 12), month = months % 12;
  const last = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const timeOfDay = start - Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  return Date.UTC(year, month, Math.min(d.getUTCDate(), last)) + timeOfDay;
}

class Facts {
  constructor(config) {
    this.catalog = config.catalog;
    this.policy = config.policy ?? {};
    this.transactions = new Map(); // transactionId -> newest signed version
    this.renewals = new Map(); // originalTransactionId -> newest signed renewal info
    this.renewalHistory = new Map(); // originalTransactionId -> Map(signedDate -> renewal info), for extensions
    this.submittedBy = new Map(); // originalTransactionId -> userId of the first app submission
  }

  storeTransaction(tx) {
    const old = this.transactions.get(tx.transactionId);
    if (!old || tx.signedDate > old.signedDate) this.transactions.set(tx.transactionId, tx);
  }

  storeRenewal(r) {
    const otid = r.originalTransactionId;
    if (!this.renewalHistory.has(otid)) this.renewalHistory.set(otid, new Map());
    const versions = this.renewalHistory.get(otid);
    if (!versions.has(r.signedDate)) versions.set(r.signedDate, r);
    const old = this.renewals.get(otid);
    if (!old || r.signedDate > old.signedDate) this.renewals.set(otid, r);
  }

  link(otid, userId) { if (!this.submittedBy.has(otid)) this.submittedBy.set(otid, userId); }

  // The user's transactions: chains the app submitted for them, or any of whose transactions names them in
  // appAccountToken. One purchase known under several ids (a restore) reads as its newest signed version.
  transactionsOf(user) {
    const chains = new Set();
    for (const [otid, u] of this.submittedBy) if (u === user) chains.add(otid);
    for (const tx of this.transactions.values()) if (tx.appAccountToken === user) chains.add(tx.originalTransactionId);
    const mine = [...this.transactions.values()].filter((tx) => chains.has(tx.originalTransactionId));
    const purchaseOf = (tx) => tx.type === AUTO ? (tx.webOrderLineItemId != null ? `${tx.originalTransactionId} period ${tx.webOrderLineItemId}` : null)
      : tx.type === NON_CONSUMABLE ? `non-consumable ${tx.originalTransactionId}` : null;
    const newest = new Map();
    for (const tx of mine) {
      const p = purchaseOf(tx), n = p && newest.get(p);
      if (p && (!n || tx.signedDate > n.signedDate || (tx.signedDate === n.signedDate && tx.transactionId > n.transactionId))) newest.set(p, tx);
    }
    return mine.map((tx) => {
      const n = newest.get(purchaseOf(tx));
      return n && n !== tx ? { ...n, transactionId: tx.transactionId } : tx;
    });
  }

  // Where an auto-renewable transaction's period ends: its expiresDate, or under extensionSignedAs "renewal-info"
  // the latest renewalDate a renewal info of its product, out of billing retry, signed during the period gave.
  periodEnd(x, chainTxs) {
    let end = x.expiresDate;
    if (this.policy.extensionSignedAs !== 'renewal-info') return end;
    const next = Math.min(...chainTxs.map((y) => y.purchaseDate).filter((p) => p > x.purchaseDate));
    for (const r of this.renewalHistory.get(x.originalTransactionId)?.values() ?? []) {
      if (r.signedDate >= x.purchaseDate && r.signedDate < next && r.isInBillingRetryPeriod !== true
        && r.productId === x.productId && isDate(r.renewalDate) && r.renewalDate > end) end = r.renewalDate;
    }
    return end;
  }

  // Per product: { paid: [ends], grace: [ends] } of the grants in force at t (an end of null: never ends).
  grants(user, t) {
    const all = this.transactionsOf(user), known = all.filter((x) => x.purchaseDate <= t);
    const grants = new Map();
    const grant = (productId, kind, end) => {
      if (!grants.has(productId)) grants.set(productId, { paid: [], grace: [] });
      grants.get(productId)[kind].push(end);
    };
    const chains = new Map(), whole = new Map();
    for (const [map, list] of [[chains, known], [whole, all]]) {
      for (const x of list) {
        if (!map.has(x.originalTransactionId)) map.set(x.originalTransactionId, []);
        map.get(x.originalTransactionId).push(x);
      }
    }
    for (const [otid, list] of chains) {
      const chain = list.sort(byPurchase), wholeChain = whole.get(otid);
      // refundScope "chain": a refund voids every transaction of its chain bought before the revocation.
      const chainRevoked = this.policy.refundScope === 'chain'
        ? Math.max(...chain.filter((x) => revokedAt(x, t)).map((x) => x.revocationDate)) : -Infinity;
      const voided = (x) => revokedAt(x, t) || x.purchaseDate < chainRevoked;
      for (const x of chain) {
        if (x.type === NON_CONSUMABLE && !voided(x)) grant(x.productId, 'paid', null);
        if (x.type !== AUTO || voided(x) || !isDate(x.expiresDate)) continue;
        const expires = this.periodEnd(x, wholeChain);
        if (this.policy.upgradeDuringIntro === 'union' && x.offerType === 1) {
          // An introductory period changed away from runs its course beside the new product.
          if (x.purchaseDate <= t && t < expires) grant(x.productId, 'paid', expires);
          continue;
        }
        // An immediate upgrade or crossgrade: a later PURCHASE of the chain inside x's period ends x there.
        let end = expires;
        for (const y of wholeChain) {
          if ((y.transactionReason === 'PURCHASE' || (y.transactionReason == null && x.isUpgraded === true))
            && y.purchaseDate > x.purchaseDate && y.purchaseDate < end) end = y.purchaseDate;
        }
        // Flagged isUpgraded without its upgrading transaction: it ended no later than the flag was signed.
        if (end === expires && x.isUpgraded === true) end = Math.min(end, x.signedDate);
        if (x.purchaseDate <= t && t < end) grant(x.productId, 'paid', expires);
      }
      // Grace: from the expiry of the chain's latest transaction to gracePeriodExpiresDate, while in billing retry
      // (a grace date without the retry flag counts as retry unless the policy says "deny").
      const latest = chain.filter((x) => x.type === AUTO).at(-1), renewal = this.renewals.get(otid);
      if (!latest || !renewal || voided(latest) || !isDate(latest.expiresDate) || latest.expiresDate > t) continue;
      const graceDate = renewal.gracePeriodExpiresDate;
      const inRetry = renewal.isInBillingRetryPeriod === true
        || (this.policy.graceWithoutRetryFlag !== 'deny' && graceDate != null);
      if (inRetry && isDate(graceDate) && t < graceDate) grant(latest.productId, 'grace', graceDate);
    }
    // Non-renewing subscriptions: the catalog's period from purchaseDate (stacked under nonRenewingStacking).
    for (const p of this.catalog.products) {
      if (p.kind !== 'non-renewing') continue;
      let lastEnd = -Infinity;
      for (const x of known.filter((y) => y.productId === p.id).sort(byPurchase)) {
        const start = this.policy.nonRenewingStacking === true ? Math.max(x.purchaseDate, lastEnd) : x.purchaseDate;
        const end = addPeriod(start, p.period);
        if (end === null) break;
        lastEnd = end;
        if (!revokedAt(x, t) && start <= t && t < end) grant(p.id, 'paid', end);
      }
    }
    const listed = new Set(known.filter((x) => x.type !== CONSUMABLE).map((x) => x.productId));
    return { grants, listed };
  }

  // The answer: one entry per catalog entitlement that one of the user's products unlocks; active when one of
  // those products is (paid or in grace), expiring with the latest of them (never, with a non-consumable).
  answer(user, t) {
    const { grants, listed } = this.grants(user, t);
    const product = (id) => {
      const g = grants.get(id);
      const ends = g && (g.paid.length ? g.paid : g.grace);
      if (!ends || !ends.length) return { active: false };
      const dated = ends.filter((e) => e !== null);
      return { active: true, expiresDate: dated.length ? Math.max(...dated) : null };
    };
    const out = [];
    for (const e of this.catalog.entitlements ?? []) {
      const held = [...new Set(e.products)].filter((id) => listed.has(id)).map(product);
      if (!held.length) continue;
      const active = held.filter((p) => p.active);
      if (!active.length) { out.push({ entitlementId: e.id, active: false }); continue; }
      const forever = active.some((p) => p.expiresDate === null);
      out.push({ entitlementId: e.id, active: true, expiresDate: forever ? null : Math.max(...active.map((p) => p.expiresDate)) });
    }
    return { entitlements: out.sort((a, b) => (a.entitlementId < b.entitlementId ? -1 : 1)) };
  }
}

// ------------------------------------------------------------------------------------------------ the protocol

// Stable JSON (sorted keys) of a notification, its nested JWS reduced to their payloads: two deliveries of the same
// notification compare equal even if Apple signed them again.
function fingerprint(body) {
  const stable = (v) => Array.isArray(v) ? `[${v.map(stable).join(',')}]`
    : v && typeof v === 'object' ? `{${Object.keys(v).sort().map((k) => JSON.stringify(k) + ':' + stable(v[k])).join(',')}}`
    : JSON.stringify(v);
  const data = body.data && { ...body.data };
  for (const k of ['signedTransactionInfo', 'signedRenewalInfo']) {
    if (data && typeof data[k] === 'string') data[k] = data[k].split('.')[1];
  }
  return stable({ ...body, data });
}

class Validator {
  constructor() { this.reset({ catalog: { products: [], groups: [] }, trustedRoots: [] }); }

  reset(config) {
    const c = config?.catalog;
    if (!c || typeof c !== 'object' || !Array.isArray(c.products) || (c.entitlements != null && !Array.isArray(c.entitlements))
      || (c.entitlements ?? []).some((e) => typeof e?.id !== 'string' || !Array.isArray(e.products))) {
      throw new Error('reset needs a catalog with products (and entitlements, each an id and its products)');
    }
    const roots = Array.isArray(config.trustedRoots) ? config.trustedRoots : [];
    if (!this.verifier || JSON.stringify(roots) !== this.rootsKey) { this.verifier = new Verifier(roots); this.rootsKey = JSON.stringify(roots); }
    this.catalog = config.catalog;
    this.facts = new Facts(config);
    this.notifications = new Map(); // notificationUUID -> fingerprint of what was accepted under it
  }

  // Why a verified payload is not for this app, or null. Transactions name bundle and environment; renewal info
  // only its environment.
  foreign(p, kind) {
    const c = this.catalog;
    const required = ['transactionId', 'originalTransactionId', 'productId'];
    if (kind === 'transaction' && (!required.every((k) => typeof p[k] === 'string') || !isDate(p.purchaseDate))) return 'transaction lacks its identifiers';
    if (kind === 'renewal' && typeof p.originalTransactionId !== 'string') return 'renewal info lacks originalTransactionId';
    if (kind === 'transaction' && p.bundleId !== c.bundleId) return `bundleId ${p.bundleId} is not ${c.bundleId}`;
    if (p.environment !== c.environment) return `${kind} environment ${p.environment} is not ${c.environment}`;
    return null;
  }

  deliver(d) {
    if (d?.appTransaction) {
      const a = d.appTransaction; // a.deviceTime is the device's claim: ignored
      const tx = this.verifier.verify(a.signedTransaction);
      const why = this.foreign(tx, 'transaction');
      if (why) return [false, why];
      if (typeof a.userId !== 'string') return [false, 'submission without userId'];
      this.facts.storeTransaction(tx);
      this.facts.link(tx.originalTransactionId, a.userId);
      return [true];
    }
    if (d?.notification) return this.notification(d.notification.signedPayload);
    return [false, 'channel not declared by this validator (app-transaction and notification only)'];
  }

  notification(signedPayload) {
    const body = this.verifier.verify(signedPayload);
    if (typeof body.notificationUUID !== 'string') return [false, 'notification without notificationUUID'];
    // The app it is about: in data, or in summary / externalPurchaseToken for notifications without data.
    const c = this.catalog, token = body.externalPurchaseToken;
    const app = body.data ?? body.summary ?? (token && {
      ...token, environment: String(token.externalPurchaseId ?? '').startsWith('SANDBOX') ? 'Sandbox' : 'Production' });
    if (!app || typeof app !== 'object') return [false, 'notification names no app'];
    if (app.bundleId !== c.bundleId) return [false, `bundleId ${app.bundleId} is not ${c.bundleId}`];
    if (app.environment !== c.environment) return [false, `environment ${app.environment} is not ${c.environment}`];
    if (app.appAppleId != null && app.appAppleId !== c.appAppleId) return [false, `appAppleId ${app.appAppleId} is not ${c.appAppleId}`];
    // The same notification again (Apple retries) is acknowledged; other content under a seen UUID is a replay.
    const print = fingerprint(body), seen = this.notifications.get(body.notificationUUID);
    if (seen !== undefined) return seen === print ? [true] : [false, 'notificationUUID already seen with other content'];
    // Nested JWS are verified on their own: a genuine envelope proves nothing about them.
    let tx = null, renewal = null;
    const data = body.data ?? {};
    for (const [key, kind] of [['signedTransactionInfo', 'transaction'], ['signedRenewalInfo', 'renewal']]) {
      if (data[key] == null) continue;
      const p = this.verifier.verify(data[key]);
      const why = this.foreign(p, kind);
      if (why) return [false, 'nested ' + why];
      if (kind === 'transaction') tx = p; else renewal = p;
    }
    // The type and subtype are hints, not state (unknown ones included): merge the signed facts it carries.
    this.notifications.set(body.notificationUUID, print);
    if (tx) this.facts.storeTransaction(tx);
    if (renewal) this.facts.storeRenewal(renewal);
    return [true];
  }

  handle(req) {
    const reply = { id: Number.isInteger(req.id) ? req.id : -1 };
    switch (req.type) {
      case 'hello':
        return Object.assign(reply, { type: 'hello', name: 'node-entitlements', protocol: 1,
          capabilities: ['app-transaction', 'notification'],
          answers: ['entitlements.active', 'entitlements.expiresDate'], channels: ['app-transaction', 'notification'] });
      case 'reset':
        this.reset(req.config);
        return Object.assign(reply, { type: 'ok' });
      case 'deliver': {
        let verdict;
        try { verdict = this.deliver(req.delivery); } catch (e) { verdict = [false, `${e instanceof Refusal ? 'refused' : 'unreadable'}: ${e.message}`]; }
        Object.assign(reply, { type: 'verdict', accepted: verdict[0] });
        if (verdict[1]) reply.reason = verdict[1];
        return reply;
      }
      case 'query': {
        const q = req.query; // q.deviceTime is the device's claim: ignored
        if (!q || typeof q.userId !== 'string' || !isDate(q.at)) throw new Error('query needs userId and at');
        return Object.assign(reply, { type: 'answer', answer: this.facts.answer(q.userId, q.at) });
      }
      default:
        return Object.assign(reply, { type: 'error', code: 'unknown-message', message: `unknown message type ${JSON.stringify(req.type)}` });
    }
  }
}

const validator = new Validator();
const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  if (!line.trim()) return;
  let reply;
  try {
    const req = JSON.parse(line);
    if (req === null || typeof req !== 'object' || Array.isArray(req)) throw new Error('not a request object');
    try { reply = validator.handle(req); } catch (e) {
      reply = { id: Number.isInteger(req.id) ? req.id : -1, type: 'error', code: 'bad-request', message: String(e.message) };
    }
  } catch (e) {
    reply = { id: -1, type: 'error', code: 'bad-request', message: String(e.message) };
  }
  process.stdout.write(JSON.stringify(reply) + '\n');
});
