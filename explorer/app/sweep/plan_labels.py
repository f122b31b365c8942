"""The cell labels of a plan figure (``explore plot DIR --plan N``): each cell's partition type
and, on a split point, its alphas, one distinct alpha a line, written to fit inside the cell.

A split level whose groups give a layer different alphas wrote them on one line
("1/2|15/43|..."), which overflowed cells a third as wide and overprinted its neighbours (new-user
trial 3). Now: the alphas are stacked, the figure is sized from the longest label, and after the
final layout each label is measured against its cell and its font shrunk until it fits (5 pt at
the least; ``overflowing`` says which still do not, for tests and the last resort)."""

from __future__ import annotations

MAX_LABELLED_LAYERS = 40  # the most layers whose cells --plan labels (a split point's alphas need the labels)
FONT, SMALL_FONT, MIN_FONT = 7.0, 6.0, 5.0  # points: <= 24 layers, more, the least a label shrinks to
CHAR_IN, LINE_IN = 0.62 / 72, 1.25 / 72  # inches per point of font: a digit's width, a line's height
PAD_IN = 0.08  # inches kept clear inside a cell, across and down


def cell_alphas(groups: list[list[str]], layer: int) -> list[str]:
    """A split plan's cell: the distinct alphas the level's groups give the layer, in group order
    (one when every group gives the same)."""
    return list(dict.fromkeys(g[layer] for g in groups))


def cell_label(plan: list[list[str]], alphas, h: int, j: int) -> str:
    """The text of level ``h``, layer ``j``: its type, then each distinct alpha on its own line."""
    return "\n".join([plan[h][j], *(cell_alphas(alphas[h], j) if alphas else ())])


def font_for(layers: int) -> float:
    return FONT if layers <= 24 else SMALL_FONT


def cell_size(plan: list[list[str]], alphas) -> tuple[float, float]:
    """The inches a cell needs (width, height) for its longest and tallest label at the font the
    figure starts with; the figure is sized from it, so shrinking is the exception."""
    L = len(plan[0]) if plan else 0
    labels = [cell_label(plan, alphas, h, j).split("\n") for h in range(len(plan)) for j in range(L)]
    size = font_for(L)
    chars = max((len(s) for lines in labels for s in lines), default=1)
    lines = max((len(lines) for lines in labels), default=1)
    return chars * CHAR_IN * size + PAD_IN, lines * LINE_IN * size + PAD_IN


def draw(ax, plan: list[list[str]], alphas) -> list:
    """Write every cell's label (none beyond MAX_LABELLED_LAYERS layers); the texts, for ``fit``."""
    L = len(plan[0]) if plan else 0
    if L > MAX_LABELLED_LAYERS:
        return []
    return [ax.text(j, h, cell_label(plan, alphas, h, j), ha="center", va="center", fontsize=font_for(L),
                    color="white", in_layout=False)
            for h in range(len(plan)) for j in range(L)]


def _cell_box(ax, text):
    """The cell of ``text`` (centred on its data point, one unit each way) in pixels."""
    from matplotlib.transforms import Bbox

    x, y = text.get_position()
    return Bbox.from_extents(*ax.transData.transform((x - 0.5, y - 0.5)), *ax.transData.transform((x + 0.5, y + 0.5)))


def overflowing(ax, texts) -> list[str]:
    """The labels wider or taller than their cell (less 2 px a side), measured as drawn."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for t in texts:
        box, cell = t.get_window_extent(renderer), _cell_box(ax, t)
        if box.width > abs(cell.width) - 4 or box.height > abs(cell.height) - 4:
            out.append(t.get_text())
    return out


def fit(ax, texts) -> int:
    """Shrink every label's font a half point at a time while any overflows its cell, down to
    MIN_FONT; a label that still does not fit (none on a figure ``cell_size`` sized, unless the
    width cap bit) keeps its type only. How many lost their alphas."""
    while texts:
        over = set(overflowing(ax, texts))
        size = texts[0].get_fontsize()
        if not over:
            return 0
        if size <= MIN_FONT:
            cut = [t for t in texts if t.get_text() in over]
            for t in cut:
                t.set_text(t.get_text().split("\n")[0])
            return len(cut)
        for t in texts:
            t.set_fontsize(max(MIN_FONT, size - 0.5))
    return 0


def cut_note(n: int) -> str:
    """The title's line when ``fit`` left alphas out, else ''."""
    return "" if not n else f"\n{n} cell{'' if n == 1 else 's'}' alphas left out (no room): plans.jsonl has them"
