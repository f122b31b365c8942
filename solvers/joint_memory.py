"""The joint uneven-split solver's memory estimate, before any table is built (issue 23, item 5):
its column tables (``joint_columns.table_bytes``); per weighting alive at once, its weighted terms
and its nested links' tables (``joint_blocks._Weighted``, ``_link_table``); one forward pass's block
tables (kept for its backtrack, then dropped: the best bound's pass keeps its rests at the cut nodes);
and a pass's largest temporary; under caps or a memory limit, their tables and terms (``limit_bytes``).
``uneven_joint.check_tables`` checks it against
``joint_columns.MAX_BYTES``; the label passes' labels have their own check (``joint_labels.check_labels``).
"""

from __future__ import annotations

from .joint_blocks import CHUNK, MINPLUS_CELLS
from .joint_columns import _Model, allowed_columns, table_bytes
from .uneven_sp import Link, Series

# weightings alive at once: ``_dual`` keeps its best bound's (the label passes start from it) while it builds
# the next pass's (each pass's own dropped before the next is built)
LIVE_WEIGHTINGS = 2


def solver_bytes(m: _Model, blocks: list[Link], caps: int = 0, memory: bool = False) -> int:
    """The joint solver's estimate: its tables (``table_bytes``) and, under ``caps`` capped levels or a
    ``memory`` limit, their tables and terms (``limit_bytes``), with the most of what is alive at once after
    them: ``LIVE_WEIGHTINGS`` weightings (``weighting_bytes``) and one pass's block tables and largest
    temporary (``pass_bytes``) in the bounding passes; one weighting, a pass and the limits' shares in the
    penalised passes (``uneven_joint._penalised``); twice the shares as they are made; the footprints'
    build (``with_limits``)."""
    counts = allowed_counts(m) if not all(b.direct for b in blocks) else None
    w, p = weighting_bytes(m, blocks, counts), pass_bytes(m, blocks, counts)
    kept, share, foot = limit_bytes(m, caps, memory)
    return table_bytes(m) + kept + max(LIVE_WEIGHTINGS * w + p, w + p + share, 2 * share, foot)


# bytes per entry of the footprints' build (``_Tables.footprints``, then floored in ``with_limits``): the object
# array's pointer, the floored copy's pointer and its Python int (32 bytes), and the int64 copy
FOOT_ENTRY_BYTES = 8 + 8 + 32 + 8
# the starts under limits (``uneven_joint._cheap_plans``: the even solve under them, the level DP, the alpha
# search), a fixed allowance: with the tables alive they rose 3.0 MiB and left 1.7 MiB of caches (AlexNet,
# tpu-mix-16, 1/16, ``--memory``; ``bench/bench_memory_guard.py``)
STARTS_BYTES = 4 * 2**20


def limit_bytes(m: _Model, caps: int, memory: bool) -> tuple[int, int, int]:
    """What caps and a memory limit add (``joint_columns.with_limits``): (kept, shares, footprints' build).
    Kept: a ``_Tables`` per capped level (``table_bytes`` but the min-plus row: none is reduced) and the
    labels' terms (``lnode``: each layer's four components and two terms per cap and for memory, n columns,
    int64, a copy even with none that can bind) and ``STARTS_BYTES``. Shares: ``_penalised``'s floats, one per
    limit term. The footprints' build: two per layer and column (``FOOT_ENTRY_BYTES``), counted where a memory limit is
    given (built whether or not it can bind)."""
    if not caps and not memory:
        return 0, 0, 0
    C, L = m.cols, len(m.net.layers)
    terms = 2 * caps + (2 if memory else 0)
    tables = caps * (table_bytes(m) - 8 * C.n_top**2 * C.n_tau)
    foot = FOOT_ENTRY_BYTES * L * 2 * C.n if memory else 0
    return tables + 8 * L * C.n * (4 + terms) + STARTS_BYTES, 8 * L * C.n * terms, foot


def nested_links(blocks: list[Link]) -> list[Link]:
    """Every link nested in a block's branches (not a single edge): each has a table per weighting."""
    out: list[Link] = []

    def walk(link: Link) -> None:
        for br in link.branches:
            if isinstance(br, Series):
                for inner in br.links:
                    if not inner.direct:
                        out.append(inner)
                        walk(inner)

    for blk in blocks:
        walk(blk)
    return out


def allowed_counts(m: _Model) -> list[int]:
    """Each layer's allowed columns (every column for the virtual source), the rows of its tables."""
    C = m.cols
    return [C.n if m.virtual and l == 0 else int(allowed_columns(m, l).sum())  # noqa: E741
            for l in range(len(m.net.layers))]  # noqa: E741


def weighting_bytes(m: _Model, blocks: list[Link], counts: list[int] | None = None) -> int:
    """What one weighting keeps, in int64 entries times 8: its weighted node and edge terms
    (``_Weighted``) and each nested link's table (allowed entry x allowed exit columns,
    ``_link_table``: allocated whole when a pass first reaches the link)."""
    C = m.cols
    lev = sum(C.K * C.n_top * C.K**h for h in range(1, C.H))
    own = len(m.net.layers) * C.n + len(m.net.edges) * (C.n_top**2 + lev)
    links = nested_links(blocks)
    if links:
        counts = allowed_counts(m) if counts is None else counts
    return 8 * (own + sum(counts[k.entry] * counts[k.exit] for k in links))


def pass_bytes(m: _Model, blocks: list[Link], counts: list[int] | None = None) -> int:
    """One forward pass's block tables (allowed entry columns x n each, kept for its backtrack; an
    upper bound: a pass with a cap skips entry columns) and its largest temporary, in int64 entries
    times 8 (none beyond ``table_bytes``' one row on a chain): the first min-plus step of ``CHUNK``
    rows over an edge (``_reduce``: CHUNK x n_top x n_tau x n_top), a block's table's sums with the
    forward values (``_Graph.forward``, ``_cut_backward``), or a chunk of a min-plus product with a
    nested link's table (``_cross``: ``MINPLUS_CELLS``, or the whole table where it is larger)."""
    if all(b.direct for b in blocks):
        return 0
    C = m.cols
    counts = allowed_counts(m) if counts is None else counts
    tables = [counts[b.entry] * C.n for b in blocks if not b.direct]
    links = [counts[k.entry] * counts[k.exit] for k in nested_links(blocks)]
    temp = max(CHUNK * C.n_top * C.n_tau * C.n_top, max(tables), max(links + [MINPLUS_CELLS]) if links else 0)
    return 8 * (sum(tables) + temp)
