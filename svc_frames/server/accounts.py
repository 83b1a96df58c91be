"""Users and their sessions: password hashes, finding a user by email, and user tokens.

Usage::

    stored = hash_password("Manager-2024!")
    verify_password("Manager-2024!", stored)            # True
    token = accounts.new_token("object_1", user_id)
    accounts.token_user(token)                          # ("object_1", user_id)
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
import time
from typing import Any

from .db import Database
from .schema import AppDef, ObjectDef

DEFAULT_TOKEN_TTL_S = 48 * 3600.0


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    """A salted scrypt hash: ``scrypt$<salt hex>$<hash hex>``."""
    salt = salt or secrets.token_bytes(16)
    h = hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1, dklen=32)
    return f"scrypt${salt.hex()}${h.hex()}"


def verify_password(password: str, stored: str | None) -> bool:
    """Whether a password matches a ``hash_password`` hash."""
    if not stored or not stored.startswith("scrypt$"):
        return False
    try:
        _, salt_hex, h_hex = stored.split("$")
        expected = hash_password(password, salt=bytes.fromhex(salt_hex))
    except ValueError:
        return False
    return hmac.compare_digest(expected, f"scrypt${salt_hex}${h_hex}")


def token_hash(token: str) -> str:
    """What is stored of a user token: its SHA-256 (tokens are 256 random bits, so a fast
    hash suffices; the stored value no longer lets anyone act as the user)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class Accounts:
    """The users of an application (records of its user objects) and their tokens."""

    def __init__(self, db: Database, app: AppDef) -> None:
        self.db = db
        self.app = app
        self.token_ttl = DEFAULT_TOKEN_TTL_S

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

    def new_token(self, obj_key: str, user_id: str, ttl: float | None = None) -> str:
        """A new user token living ``ttl`` seconds (default ``token_ttl``); only its hash
        is stored."""
        token = secrets.token_urlsafe(32)
        self.db.write("INSERT INTO user_tokens(token_hash, obj, user_id, expires) "
                      "VALUES (?,?,?,?)",
                      (token_hash(token), obj_key, user_id,
                       time.time() + (self.token_ttl if ttl is None else ttl)))
        return token

    def token_user(self, token: str) -> tuple[str, str] | None:
        """(user object key, user id) of a live token, else None (looked up by hash)."""
        row = self.db.reader.execute("SELECT obj, user_id, expires FROM user_tokens "
                                     "WHERE token_hash = ?", (token_hash(token),)).fetchone()
        if row is None or row[2] < time.time():
            return None
        return row[0], row[1]

    @staticmethod
    def forget_user(conn: sqlite3.Connection, user_id: str) -> None:
        """Drop the tokens of a deleted user (inside the deleting transaction)."""
        conn.execute("DELETE FROM user_tokens WHERE user_id = ?", (user_id,))
