"""The seal of a cache entry: its first field ``digest``, the sha256 of the rest of its text,
checked on every load, so that an entry edited by hand or damaged is solved again, never
returned as if solved. Here, beside ``code_stamp``, so that both caches of results (the sweep's,
``sweep.cache``, and ``explore reproduce``'s, ``reproduce.points``) seal theirs the same way and
neither depends on the other.

Why a seal and not re-scoring a cached plan with the evaluator: an entry holds more than a plan's
cost (a status, a bound, a gap: what was proven), which no evaluation of the plan can check; the
seal covers every byte. It guards against edits and damage, not against a forger who recomputes it.
"""

from __future__ import annotations

import hashlib

SEAL_HEAD = '{"digest": "'  # an entry's text: SEAL_HEAD, 64 hex digits, '", ', then the rest of the object
_SEAL_END = '", '
_BODY_AT = len(SEAL_HEAD) + 64 + len(_SEAL_END)


def seal(body: str) -> str:
    """The text of an entry whose JSON object (without its seal; at least one field) is ``body``:
    the object with a first field ``digest``, the sha256 of ``body``."""
    return f"{SEAL_HEAD}{hashlib.sha256(body.encode()).hexdigest()}{_SEAL_END}{body[1:]}"


def unseal(text: str) -> str | None:
    """The JSON text ``seal`` was given, or None when ``text`` is not sealed or its seal fails
    (a byte of it changed: a hand edit, a damaged file, another program's file)."""
    if not (text.startswith(SEAL_HEAD) and text[_BODY_AT - len(_SEAL_END):_BODY_AT] == _SEAL_END):
        return None
    body = "{" + text[_BODY_AT:]
    digest = text[len(SEAL_HEAD):_BODY_AT - len(_SEAL_END)]
    return body if hashlib.sha256(body.encode()).hexdigest() == digest else None
