"""A cache entry's seal: the JSON text of an entry begins with a field ``digest``, the sha256 of the
rest of it, checked on every load, so that an entry edited by hand or damaged is solved again, never
read as solved. The sweep cache's entries (``sweep.cache``) and ``explore reproduce``'s points
(``reproduce.points``) are sealed so. It guards against edits and damage, not against a forger who
recomputes the digest."""

from __future__ import annotations

import hashlib

SEAL_HEAD = '{"digest": "'  # an entry's text: SEAL_HEAD, 64 hex digits, '", ', then the rest of the object
_SEAL_END = '", '
_BODY_AT = len(SEAL_HEAD) + 64 + len(_SEAL_END)


def seal(body: str) -> str:
    """The text of an entry whose JSON object (without its seal) is ``body``: the object with a
    first field ``digest``, the sha256 of ``body``."""
    return f"{SEAL_HEAD}{hashlib.sha256(body.encode()).hexdigest()}{_SEAL_END}{body[1:]}"


def unseal(text: str) -> str | None:
    """The JSON text ``seal`` was given, or None when ``text`` is not sealed or its seal fails
    (a byte of it changed: a hand edit, a damaged file, another program's file)."""
    if not (text.startswith(SEAL_HEAD) and text[_BODY_AT - len(_SEAL_END):_BODY_AT] == _SEAL_END):
        return None
    body = "{" + text[_BODY_AT:]
    digest = text[len(SEAL_HEAD):_BODY_AT - len(_SEAL_END)]
    return body if hashlib.sha256(body.encode()).hexdigest() == digest else None
