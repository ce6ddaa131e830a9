#!/usr/bin/env python3
"""Unit tests of the entitlement rules (access.py): python3 -m unittest discover -s Examples/notes-backend"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import access  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DAY = 86_400_000
T0 = 1_772_323_260_000  # 2026-03-01T00:01:00Z
YEARLY, MONTHLY, LITE = "com.example.maps.pro.yearly", "com.example.maps.pro.monthly", "com.example.maps.lite.monthly"
OFFLINE, SEASON = "com.example.maps.offline", "com.example.maps.season"


def sub(tid, pid, start, end, otid="1000", wol=None, signed=None, **extra):
    tx = {"transactionId": tid, "originalTransactionId": otid, "productId": pid, "type": access.AUTO_RENEWABLE,
          "purchaseDate": start, "expiresDate": end, "signedDate": signed if signed is not None else start,
          "webOrderLineItemId": wol or "w" + tid, "transactionReason": "PURCHASE"}
    tx.update(extra)
    return tx


def one_time(tid, pid, kind, start, otid=None, **extra):
    tx = {"transactionId": tid, "originalTransactionId": otid or tid, "productId": pid, "type": kind,
          "purchaseDate": start, "signedDate": start}
    tx.update(extra)
    return tx


class AccessTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.catalog = access.Catalog.load(os.path.join(HERE, "catalog.json"))

    def features(self, txs, now, infos=None, **kw):
        return {f["name"]: (f["active"], f["expires"])
                for f in access.feature_access(self.catalog, txs, infos or {}, now, **kw)}

    def test_calendar_months_clamp_and_keep_milliseconds(self):
        jan31 = 1_769_817_600_123  # 2026-01-31T00:00:00.123Z
        self.assertEqual(access.add_duration(jan31, "P1M"), 1_772_236_800_123)  # 2026-02-28T00:00:00.123Z
        self.assertEqual(access.add_duration(T0, "P3M"), 1_780_272_060_000)  # 2026-06-01T00:01:00Z
        self.assertEqual(access.add_duration(T0, "P2W"), T0 + 14 * DAY)

    def test_never_seen_user_has_every_feature_inactive(self):
        self.assertEqual(self.features([], T0), {"pro": (False, None), "maps": (False, None)})

    def test_half_open_period(self):
        txs = [sub("1", MONTHLY, T0, T0 + 30 * DAY)]
        self.assertEqual(self.features(txs, T0 - 1)["pro"], (False, None))
        self.assertEqual(self.features(txs, T0)["pro"], (True, T0 + 30 * DAY))
        self.assertEqual(self.features(txs, T0 + 30 * DAY)["pro"], (False, None))

    def test_refund_acts_from_its_date(self):
        txs = [sub("1", MONTHLY, T0, T0 + 30 * DAY, revocationDate=T0 + 5 * DAY)]
        self.assertTrue(self.features(txs, T0 + 5 * DAY - 1)["pro"][0])
        self.assertFalse(self.features(txs, T0 + 5 * DAY)["pro"][0])
        self.assertTrue(self.features(txs, T0 + 5 * DAY, honour_refunds=False)["pro"][0])

    def test_upgrade_cuts_the_old_period(self):
        old = sub("1", LITE, T0, T0 + 30 * DAY, isUpgraded=True, signed=T0 + 10 * DAY)
        new = sub("2", YEARLY, T0 + 10 * DAY, T0 + 375 * DAY)
        at = T0 + 12 * DAY
        self.assertEqual(self.features([old, new], at), {"pro": (True, T0 + 375 * DAY),
                                                         "maps": (True, T0 + 375 * DAY)})
        self.assertEqual(self.features([old, new], T0 + 5 * DAY)["maps"], (True, T0 + 30 * DAY))
        # The flag arrived without the upgrade: nothing from the flag's signedDate on.
        self.assertFalse(self.features([old], at)["maps"][0])

    def test_grace_after_the_latest_period(self):
        txs = [sub("1", MONTHLY, T0, T0 + 30 * DAY)]
        info = {"1000": {"originalTransactionId": "1000", "isInBillingRetryPeriod": True,
                         "gracePeriodExpiresDate": T0 + 46 * DAY, "signedDate": T0 + 30 * DAY}}
        self.assertEqual(self.features(txs, T0 + 31 * DAY, info)["pro"], (True, T0 + 46 * DAY))
        self.assertFalse(self.features(txs, T0 + 46 * DAY, info)["pro"][0])
        del info["1000"]["gracePeriodExpiresDate"]  # billing retry without grace: nothing
        self.assertFalse(self.features(txs, T0 + 31 * DAY, info)["pro"][0])

    def test_restored_copy_follows_the_refund_of_the_purchase(self):
        original = sub("1", MONTHLY, T0, T0 + 30 * DAY, wol="w1", revocationDate=T0 + DAY, signed=T0 + DAY)
        restored = sub("2", MONTHLY, T0, T0 + 30 * DAY, otid="1000", wol="w1", signed=T0 + 1000)
        self.assertFalse(self.features([original, restored], T0 + 2 * DAY)["pro"][0])

    def test_lifetime_never_expires_and_season_lasts_its_duration(self):
        txs = [one_time("5", OFFLINE, access.NON_CONSUMABLE, T0),
               one_time("6", SEASON, access.NON_RENEWING, T0),
               sub("7", LITE, T0, T0 + 30 * DAY)]
        self.assertEqual(self.features(txs, T0 + DAY)["maps"], (True, None))
        self.assertEqual(self.features(txs[1:], T0 + 40 * DAY)["maps"], (True, 1_780_272_060_000))
        self.assertFalse(self.features(txs[1:], 1_780_272_060_000)["maps"][0])

    def test_credits_add_up_per_unit_and_a_refund_takes_its_share_back(self):
        credits = "com.example.maps.credits"
        txs = [one_time("8", credits, access.CONSUMABLE, T0, quantity=2),
               one_time("9", credits, access.CONSUMABLE, T0 + DAY, revocationDate=T0 + 3 * DAY)]
        balance = lambda t, **kw: access.credit_balances(self.catalog, txs, t, **kw)[0]["balance"]  # noqa: E731
        self.assertEqual(balance(T0), 200)
        self.assertEqual(balance(T0 + 2 * DAY), 300)
        self.assertEqual(balance(T0 + 3 * DAY), 200)
        self.assertEqual(balance(T0 + 3 * DAY, claw_back=False), 300)


if __name__ == "__main__":
    unittest.main()
