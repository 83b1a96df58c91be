"""Password hashes and the cache of pairs that matched (server/accounts.py)."""

from __future__ import annotations

from svc_frames.server.accounts import hash_password, verify_password


def test_a_password_that_matched_once_skips_the_hash(scrypt_calls: list[int]) -> None:
    stored = hash_password("Manager-2024!")
    assert verify_password("Manager-2024!", stored)
    assert verify_password("Manager-2024!", stored)
    assert len(scrypt_calls) == 2            # the hash, then one check; the repeat costs none


def test_a_wrong_password_costs_a_hash_every_time(scrypt_calls: list[int]) -> None:
    stored = hash_password("Manager-2024!")
    assert verify_password("Manager-2024!", stored)
    for _ in range(2):
        assert not verify_password("manager-2024!", stored)
    assert len(scrypt_calls) == 4


def test_a_new_password_does_not_inherit_the_old_ones_match(scrypt_calls: list[int]) -> None:
    old, new = hash_password("first-Pass1"), hash_password("second-Pass2")
    assert verify_password("first-Pass1", old)
    assert not verify_password("first-Pass1", new)
    assert verify_password("second-Pass2", new)


def test_unknown_or_malformed_hashes_cost_one_hash_and_never_match(scrypt_calls: list[int]
                                                                    ) -> None:
    for stored in (None, "", "plain", "scrypt$zz$00",
                   "scrypt$" + "00" * 16 + "$" + "00" * 32):   # nothing hashes to zeros
        assert not verify_password("", stored)
        assert not verify_password("anything", stored)
    assert len(scrypt_calls) == 10
