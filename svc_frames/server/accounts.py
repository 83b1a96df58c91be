"""Users and their sessions: password hashes, login, and user tokens.

A token lives 48 hours (two weeks with "remember me", docs/hosted-behaviour.md §5). Each
use checks its user as it is now: the token does not work while the user is inactive (a
status other than ``active``; active again, its unexpired tokens work again), and stops
for good when the user is deleted or given another password. Login
costs one password hash whether or not the e-mail is known, so its time does not tell
which e-mails have an account (a password that already matched in this process skips
it: only its owner can tell).

Usage::

    stored = hash_password("Manager-2024!")
    verify_password("Manager-2024!", stored)            # True
    obj, uid = accounts.login("manager@example.com", "Manager-2024!")
    token = accounts.new_token(obj.key, uid)
    accounts.token_user(token)                          # ("object_1", user_id)
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import secrets
import sqlite3
import time
from collections.abc import Mapping
from typing import Any

from .db import Database
from .schema import AppDef, ObjectDef

DEFAULT_TOKEN_TTL_S = 48 * 3600.0
REMEMBER_TTL_S = 14 * 24 * 3600.0  # "remember me" tokens live two weeks
# checked when there is no hash to check against (unknown e-mail, no password set), so
# that login costs one scrypt either way; no password hashes to all zeros
_NO_HASH = "scrypt$" + "00" * 16 + "$" + "00" * 32


class LoginRefused(Exception):
    """Login refused: ``reason`` is the message to answer (no account detail leaks)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    """A salted scrypt hash: ``scrypt$<salt hex>$<hash hex>``."""
    salt = salt or secrets.token_bytes(16)
    h = hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1, dklen=32)
    return f"scrypt${salt.hex()}${h.hex()}"


@functools.lru_cache(maxsize=64)
def published_password_hash(password: str) -> str:
    """``hash_password`` of a password that is published anyway (the generated demo users'):
    one hash per process, shared by every service it starts (scrypt costs about 0.1 s by
    design, and a test suite starts hundreds of demo services)."""
    return hash_password(password)


def _salt_of(stored: str | None) -> bytes | None:
    if not stored or stored.count("$") != 2 or not stored.startswith("scrypt$"):
        return None
    try:
        return bytes.fromhex(stored.split("$")[1])
    except ValueError:
        return None


# Digests of (stored hash, password) pairs that matched, under a key of this process: a
# user who logs in again (a test suite logs the demo users in hundreds of times) skips
# the scrypt. Only a matching pair gets in, so the time saved tells nothing to whoever
# lacks the password; the digests are keyed, so memory holds nothing to test guesses
# against without the key beside it.
_MATCHED_KEY = secrets.token_bytes(32)
_MATCHED: set[bytes] = set()
_MATCHED_MAX = 4096


def _pair_digest(password: str, stored: str) -> bytes:
    return hmac.digest(_MATCHED_KEY, stored.encode() + b"\0"
                       + password.encode("utf-8", "surrogatepass"), "sha256")


def verify_password(password: str, stored: str | None) -> bool:
    """Whether a password matches a ``hash_password`` hash; one scrypt whatever
    ``stored`` holds (None or malformed is checked against a hash nothing matches),
    except for a pair that already matched in this process."""
    salt = _salt_of(stored)
    target = stored if salt is not None and stored else _NO_HASH
    pair = _pair_digest(password, target)
    if salt is not None and pair in _MATCHED:
        return True
    expected = hash_password(password, salt=_salt_of(target))
    matched = salt is not None and hmac.compare_digest(expected, target)
    if matched:
        if len(_MATCHED) >= _MATCHED_MAX:
            _MATCHED.clear()
        _MATCHED.add(pair)
    return matched


def token_hash(token: str) -> str:
    """What is stored of a user token: its SHA-256 (tokens are 256 random bits, so a fast
    hash suffices; the stored value no longer lets anyone act as the user)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def inactive_status(obj: ObjectDef, record: Mapping[str, Any]) -> str | None:
    """The user's status when it is not active (a multiple choice named like "status"
    holding another value than ``active``), else None."""
    for f in obj.fields:
        if f.kind == "multiple_choice" and "status" in f.name.lower():
            status = record.get(f.key + "_raw")
            if status not in (None, "", "active"):
                return str(status)
    return None


def password_stamp(obj: ObjectDef, secret: Mapping[str, str]) -> str:
    """What a token remembers of its user's password: a digest of the stored hash, so a
    new password (a new salt, always) ends every token issued before it."""
    keys = obj.fields_of("password")
    stored = secret.get(keys[0].key, "") if keys else ""
    return hashlib.sha256(stored.encode()).hexdigest()[:32]


class Accounts:
    """The users of an application (records of its user objects) and their tokens."""

    def __init__(self, db: Database, app: AppDef) -> None:
        self.db = db
        self.app = app
        self.token_ttl = DEFAULT_TOKEN_TTL_S
        if "stamp" not in db.columns("user_tokens"):  # a data directory made before
            db.write("ALTER TABLE user_tokens ADD COLUMN stamp TEXT NOT NULL DEFAULT ''")

    def find_user(self, email: str) -> tuple[ObjectDef, str, dict[str, Any], dict[str, str]]:
        """(user object, record id, parsed record, secrets) for an email; KeyError if none."""
        for obj in self.app.objects.values():
            if not obj.is_user:
                continue
            emails = obj.fields_of("email")
            if not emails:
                continue
            key = emails[0].key
            row = self.db.reader.execute(
                f"SELECT id, frag, secret FROM records WHERE obj = ? AND "
                f"json_extract(vals, '$.\"{key}\"') = ? LIMIT 1",
                (obj.key, email.strip().lower())).fetchone()
            if row:
                return obj, row[0], json.loads(row[1]), json.loads(row[2] or "{}")
        raise KeyError(email)

    def login(self, email: str, password: str) -> tuple[ObjectDef, str]:
        """(user object, user id) of matching credentials of an active user, else
        ``LoginRefused``. One password hash in every case (unknown e-mail included)."""
        try:
            obj, uid, rec, secret = self.find_user(email)
        except KeyError:
            verify_password(password, None)  # as long as a known e-mail takes
            raise LoginRefused("Email or password incorrect.") from None
        keys = obj.fields_of("password")
        if not verify_password(password, secret.get(keys[0].key) if keys else None):
            raise LoginRefused("Email or password incorrect.")
        status = inactive_status(obj, rec)
        if status is not None:
            raise LoginRefused(f"Account is {status}.")
        return obj, uid

    def new_token(self, obj_key: str, user_id: str, ttl: float | None = None) -> str:
        """A new user token living ``ttl`` seconds (default ``token_ttl``); only its hash
        is stored, with the stamp of the user's password."""
        obj = self.app.objects[obj_key]
        row = self.db.reader.execute("SELECT secret FROM records WHERE obj = ? AND id = ?",
                                     (obj_key, user_id)).fetchone()
        stamp = password_stamp(obj, json.loads(row[0] or "{}") if row else {})
        token = secrets.token_urlsafe(32)
        self.db.write("INSERT INTO user_tokens(token_hash, obj, user_id, expires, stamp) "
                      "VALUES (?,?,?,?,?)",
                      (token_hash(token), obj_key, user_id,
                       time.time() + (self.token_ttl if ttl is None else ttl), stamp))
        return token

    def token_user(self, token: str) -> tuple[str, str] | None:
        """(user object key, user id) of a live token, else None: unknown (looked up by
        hash), expired, its user inactive now, or since deleted or given a new password."""
        conn = self.db.reader
        row = conn.execute("SELECT obj, user_id, expires, stamp FROM user_tokens "
                           "WHERE token_hash = ?", (token_hash(token),)).fetchone()
        if row is None or row[2] < time.time():
            return None
        obj = self.app.objects.get(row[0])
        user = conn.execute("SELECT frag, secret FROM records WHERE obj = ? AND id = ?",
                            (row[0], row[1])).fetchone()
        if obj is None or user is None or inactive_status(obj, json.loads(user[0])):
            return None
        if not hmac.compare_digest(row[3], password_stamp(obj, json.loads(user[1] or "{}"))):
            return None
        return row[0], row[1]

    @staticmethod
    def forget_user(conn: sqlite3.Connection, user_id: str) -> None:
        """Drop the tokens of a deleted user (inside the deleting transaction)."""
        conn.execute("DELETE FROM user_tokens WHERE user_id = ?", (user_id,))
