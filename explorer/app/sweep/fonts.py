"""Fonts of the plots: layer, model and series names in any script. matplotlib's DejaVu Sans has
no CJK (and many other) glyphs; an installed font that has them is added as a fallback, and a
character no font has is drawn as a box and said once (``explore plot: warning: ...``), not as
matplotlib's raw warning per glyph and per drawing. Every text is drawn as written (``literal_text``)."""

from __future__ import annotations

import re
import warnings
from contextlib import contextmanager
from typing import Iterator

# fonts with wide coverage, tried in this order after DejaVu Sans (the ones installed)
FALLBACKS = ("Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans CJK KR", "Source Han Sans",
             "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "Droid Sans Fallback", "AR PL UMing CN", "Noto Sans",
             "Noto Sans Arabic", "Noto Sans Hebrew", "Noto Sans Devanagari", "Noto Sans Thai", "Arial Unicode MS")
BASE = "DejaVu Sans"
_GLYPH = re.compile(r"Glyph (\d+) .*missing from font")


def use_fallbacks(matplotlib) -> tuple[str, ...]:
    """Put the installed fallback fonts after DejaVu Sans (matplotlib draws a glyph from the first
    font of the list that has it); the fallbacks used."""
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    chosen = tuple(n for n in FALLBACKS if n in installed)
    if chosen and BASE in installed:
        matplotlib.rcParams["font.family"] = [BASE, *chosen]
    return chosen


@contextmanager
def literal_text() -> Iterator[None]:
    """Draw every text made meanwhile as written: titles, labels, tick labels, legend entries and
    layer names come from the user or the data, and a '$' in one (``--title '$x^{$'``, a layer
    named ``f$\\q{$``) must not be read as matplotlib's mathtext (a parse error: a traceback). The
    sweep plots set no log-axis formatter that writes mathtext (``labels.plain_log_labels``)."""
    import matplotlib

    held = matplotlib.rcParams["text.parse_math"]  # this setting alone (rc_context would undo the fonts chosen meanwhile)
    matplotlib.rcParams["text.parse_math"] = False
    try:
        yield
    finally:
        matplotlib.rcParams["text.parse_math"] = held


@contextmanager
def missing_glyphs() -> Iterator[set[str]]:
    """Collect the characters matplotlib finds no glyph for while drawing (their warnings are not
    shown); any other warning is shown as before."""
    found: set[str] = set()
    with warnings.catch_warnings(record=True) as caught:
        warnings.filterwarnings("always", message="Glyph .* missing from font")
        yield found
    for w in caught:
        m = _GLYPH.search(str(w.message))
        if m:
            found.add(chr(int(m.group(1))))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def glyph_note(chars: set[str]) -> tuple[str, ...]:
    """One note naming the characters drawn as boxes, or none."""
    if not chars:
        return ()
    some = "".join(sorted(chars)[:12]) + ("..." if len(chars) > 12 else "")
    return (f"{len(chars)} character{'' if len(chars) == 1 else 's'} ({some}) have no glyph in the installed fonts and "
            "are drawn as boxes: install a font that has them (e.g. Noto Sans CJK for Chinese or Japanese)",)
