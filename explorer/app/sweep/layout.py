"""Layout checks of a drawn matplotlib figure: x tick labels that would overlap are turned or
thinned, a legend that would cover data moves beside the axes. Called after the figure is
drawn, on the final layout (``finish``), so what is checked is what is saved."""

from __future__ import annotations

from typing import Any

PAD = 4.0  # pixels kept between two tick labels
ROTATIONS = ((0, "center", "default"), (45, "right", "anchor"), (90, "center", "default"))
MIN_FONT = 5.0


def _renderer(fig):
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _boxes(texts, renderer) -> list:
    return [t.get_window_extent(renderer) for t in texts]


def _clash(a, b, pad: float = PAD) -> bool:
    return a.x0 < b.x1 + pad and b.x0 < a.x1 + pad and a.y0 < b.y1 and b.y0 < a.y1


def shown_xticklabels(ax) -> list:
    """The x tick labels that are drawn: visible, with text, inside the view (major and minor)."""
    lo, hi = sorted(ax.get_xlim())
    span = (hi - lo) * 1e-9
    out = []
    for tick in [*ax.xaxis.get_major_ticks(), *ax.xaxis.get_minor_ticks()]:
        t = tick.label1
        if t.get_visible() and t.get_text() and lo - span <= tick.get_loc() <= hi + span:
            out.append(t)
    return out


def overlapping(texts, renderer) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes overlap (every pair, not only neighbours)."""
    boxes = _boxes(texts, renderer)
    return [(texts[i].get_text(), texts[j].get_text()) for i in range(len(texts)) for j in range(i + 1, len(texts))
            if _clash(boxes[i], boxes[j])]


def _in_view(ax, minor: bool) -> list[tuple[float, Any]]:
    lo, hi = sorted(ax.get_xlim())
    span = (hi - lo) * 1e-9
    ticks = ax.xaxis.get_minor_ticks() if minor else ax.xaxis.get_major_ticks()
    locs = ax.xaxis.get_minorticklocs() if minor else ax.xaxis.get_majorticklocs()
    return [(loc, tick.label1) for loc, tick in zip(locs, ticks) if lo - span <= loc <= hi + span]


def _thin(ax, renderer) -> None:
    """Keep the labels that fit, major ones first, left to right; blank the rest (their ticks stay)."""
    major, minor = _in_view(ax, False), _in_view(ax, True)
    kept = []
    for group in (major, minor):
        for _, text in sorted(group, key=lambda p: p[0]):
            if not text.get_text() or not text.get_visible():
                continue
            box = text.get_window_extent(renderer)
            if all(not _clash(box, k) for k in kept):
                kept.append(box)
            else:
                text.set_text("")
    for group, is_minor in ((major, False), (minor, True)):
        if group:  # freeze them: a redraw keeps the ticks and the blanks
            ax.set_xticks([loc for loc, _ in group], [t.get_text() for _, t in group], minor=is_minor)


def _turn(ax, fig, rotation: int, ha: str, mode: str, size: float | None = None) -> bool:
    for t in shown_xticklabels(ax):
        t.set_rotation(rotation)
        t.set_horizontalalignment(ha)
        t.set_rotation_mode(mode)
        if size:
            t.set_fontsize(size)
    return not overlapping(shown_xticklabels(ax), _renderer(fig))


def fit_xticklabels(ax, categorical: bool) -> bool:
    """Make the x tick labels not overlap; True when something changed. Numbers: thin them out
    (every other tick label is enough to read the axis). Categories: each is named, so turn them
    45 then 90 degrees, then shrink the font, and thin them only when even that does not fit."""
    fig = ax.figure
    renderer = _renderer(fig)
    if not overlapping(shown_xticklabels(ax), renderer):
        return False
    if categorical:
        for rotation, ha, mode in ROTATIONS[1:]:
            if _turn(ax, fig, rotation, ha, mode):
                return True
        size = shown_xticklabels(ax)[0].get_fontsize()
        while size > MIN_FONT:
            size = max(MIN_FONT, size - 1)
            if _turn(ax, fig, 90, "center", "default", size):
                return True
    _thin(ax, _renderer(fig))
    return True


def _inside(box, xy) -> bool:
    return bool(((xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1)).any())


def _covers(box, ax, renderer) -> bool:
    """Whether ``box`` (a legend's) covers a bar, a line, a marker of ``ax``."""
    from matplotlib.path import Path

    for patch in ax.patches:
        b = patch.get_window_extent(renderer)
        if b.width > 0.5 and b.height > 0.5 and _clash(box, b, 0):
            return True
    for line in ax.lines:
        xy = line.get_transform().transform(line.get_xydata())
        if len(xy) and (_inside(box, xy) or (len(xy) > 1 and Path(xy).intersects_bbox(box, filled=False))):
            return True
    for coll in ax.collections:
        offsets = coll.get_offsets()
        if len(offsets) and _inside(box, coll.get_offset_transform().transform(offsets)):
            return True
    return False


def legend_out_of_the_way(ax) -> bool:
    """A legend inside ``ax`` that covers its data moves beside it, on the right; True when moved."""
    leg = ax.get_legend()
    if leg is None or leg.get_bbox_to_anchor().bounds != ax.bbox.bounds:  # placed by hand: leave it
        return False
    renderer = _renderer(ax.figure)
    if not _covers(leg.get_window_extent(renderer), ax, renderer):
        return False
    leg.set_loc("upper left")
    leg.set_bbox_to_anchor((1.01, 1), transform=ax.transAxes)
    return True


def fit_title(ax) -> bool:
    """Wrap a title wider than the figure (tight_layout never shrinks it); True when wrapped."""
    import textwrap

    title = ax.title
    renderer = _renderer(ax.figure)
    box, fig_width = title.get_window_extent(renderer), ax.figure.bbox.width
    centre = (box.x0 + box.x1) / 2  # centred over the axes: room to the nearer edge of the figure, twice
    width, room = box.width, 2 * min(centre, fig_width - centre) - 8
    if width <= room or not title.get_text():
        return False
    lines = title.get_text().split("\n")
    chars = max(20, int(max(map(len, lines)) * room / width))
    wrapped = "\n".join(w for line in lines for w in (textwrap.wrap(line, chars) or [""]))
    if wrapped == title.get_text():
        return False
    title.set_text(wrapped)
    return True


def finish(fig, categorical: dict | None = None) -> None:
    """Lay ``fig`` out, then fit every axes' x tick labels (``categorical``: axes -> True when its
    x axis names categories) and move legends off the data, until nothing changes."""
    categorical = categorical or {}
    for _ in range(4):
        fig.tight_layout()
        changed = False
        for ax in fig.axes:
            if ax.get_label() == "<colorbar>":
                changed |= fit_colorbar_label(fig, ax)
                continue
            changed |= fit_xticklabels(ax, categorical.get(ax, False))
            changed |= legend_out_of_the_way(ax)
            changed |= fit_title(ax)
        if not changed:
            return


def fit_colorbar_label(fig, ax) -> bool:
    """Wrap a colour bar's label into lines until it is no taller than the figure (less a margin):
    a long one ran past the image's edges (trial 8: "speedup over data parallelism, equal split
    (×)" on a two-row heatmap). Whether it changed."""
    import textwrap

    text = ax.yaxis.label
    words = " ".join(text.get_text().split())
    if not words:
        return False
    fig.canvas.draw()
    room = fig.bbox.height * 0.92
    if text.get_window_extent(fig.canvas.get_renderer()).height <= room:
        return False
    width = len(words)
    while width > 8:
        width = max(8, int(width * 0.8))
        text.set_text("\n".join(textwrap.wrap(words, width)))
        fig.canvas.draw()
        if text.get_window_extent(fig.canvas.get_renderer()).height <= room:
            break
    return True


LABEL_ROW = 11.0  # points between two rows of a column of labels (7-point text)
LABEL_ROWS = 12  # rows tried above and below the middle of a column
COLUMN_GAP = 36.0  # points between the crowded points and their column of labels
CROWDED = 12.0  # points: a point with another this near is labelled in a column, with a leader line
BESIDE = ((5.0, 4.0, "left"), (5.0, -10.0, "left"), (-5.0, 4.0, "right"), (-5.0, -10.0, "right"))


def _crowded(pixels, per_point: float) -> list[bool]:
    near = CROWDED * per_point
    return [any(j != i and abs(a[0] - b[0]) < near and abs(a[1] - b[1]) < near for j, b in enumerate(pixels))
            for i, a in enumerate(pixels)]


def _column(pixels, crowded, per_point: float) -> list[tuple[float, float, str, float]]:
    """The places of a column of labels beside the crowded points, nearest their middle first:
    (x, y) in pixels of the text's inner edge, its alignment and where its leader line meets it."""
    xs = [p[0] for p, c in zip(pixels, crowded) if c]
    ys = [p[1] for p, c in zip(pixels, crowded) if c]
    if not xs:
        return []
    mid, gap, row = sum(ys) / len(ys), COLUMN_GAP * per_point, LABEL_ROW * per_point
    rows = sorted(range(-LABEL_ROWS, LABEL_ROWS + 1), key=lambda k: (abs(k), -k))
    return [(x, mid + k * row, ha, rel) for k in rows for x, ha, rel in ((max(xs) + gap, "left", 0.0),
                                                                          (min(xs) - gap, "right", 1.0))]


def label_box(ann, renderer):
    """An annotation's text box, without its leader line."""
    from matplotlib.text import Text

    ann.update_positions(renderer)  # the text's place from its point and offset (else set at draw time)
    return Text.get_window_extent(ann, renderer)


def leader(ann, renderer):
    """An annotation's leader line (its point, in data coordinates, to its text's centre) as a
    straight segment, or None."""
    from matplotlib.path import Path

    if ann.arrow_patch is None:
        return None
    box = label_box(ann, renderer)
    rx, ry = ann.arrowprops.get("relpos", (0.5, 0.5))
    start = ann.axes.transData.transform(ann.xy)
    return Path([tuple(start), (box.x0 + rx * box.width, box.y0 + ry * box.height)])


def _free(box, line, taken, lines, page) -> bool:
    """A label's text box inside ``page`` (the axes: off the tick labels), clear of the boxes taken and of their leader lines; its
    own leader line crosses none of the boxes taken."""
    inside = page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1
    return (inside and not any(_clash(box, other, 2.0) for other in taken)
            and not any(other.intersects_bbox(box, filled=False) for other in lines)
            and (line is None or not any(line.intersects_bbox(other, filled=False) for other in taken)))


def place_labels(ax, labels, fontsize: float = 7) -> list[str]:
    """Annotate each (x, y, text) of ``labels`` where its text is clear of the labels placed
    before it (their text and leader lines) and of the legend, inside the axes, and its own
    leader line crosses no label: a point alone beside itself (``BESIDE``), crowded points (another
    within ``CROWDED``) in a column beside them with leader lines, after the others. The texts
    that find no such place are not drawn and are returned. Call after ``finish``: labels stay
    out of the layout (they do not move the axes), so what is checked here is what is saved."""
    renderer = _renderer(ax.figure)
    per_point = ax.figure.dpi / 72
    pixels = [tuple(ax.transData.transform((x, y))) for x, y, _ in labels]
    crowded = _crowded(pixels, per_point)
    column = _column(pixels, crowded, per_point)
    legend = ax.get_legend()
    taken = [legend.get_window_extent(renderer)] if legend is not None else []
    lines: list = []
    left_out = []
    for n in sorted(range(len(labels)), key=lambda n: crowded[n]):
        x, y, text = labels[n]
        px, py = pixels[n]
        places = [(dx, dy, ha, "baseline", None) for dx, dy, ha in ([] if crowded[n] else BESIDE)]
        places += [((cx - px) / per_point, (cy - py) / per_point, ha, "center", (rel, 0.5)) for cx, cy, ha, rel in column]
        for dx, dy, ha, va, meets in places:
            lead = None if meets is None else dict(arrowstyle="-", lw=0.5, color="#999999", relpos=meets, shrinkA=0,
                                                   shrinkB=2)
            ann = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize, ha=ha,
                              va=va, arrowprops=lead, annotation_clip=False)
            ann.set_in_layout(False)
            box, line = label_box(ann, renderer), leader(ann, renderer)
            if _free(box, line, taken, lines, ax.bbox):
                taken.append(box)
                lines += [line] if line is not None else []
                break
            ann.remove()
        else:
            left_out.append(text)
    return left_out
