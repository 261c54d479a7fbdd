"""The HTML report's charts, drawn with matplotlib as SVG (the ``html`` extra).

matplotlib is imported when a chart is drawn, never by ``import labelguard`` or another
output format. Figures are made without pyplot (no global state, no GUI backend); text is
drawn as paths, so a chart needs no font; ids and metadata are fixed, so one report gives
one file.
"""

from __future__ import annotations

import base64
import contextlib
import io
from typing import Iterator

from labelguard._optional import require
from labelguard.core.text import LISTED, printable

IN_SPEC = "#4c8a5b"
OUTSIDE = "#c0392b"
IGNORED = "#9aa0a6"
UNJUDGED = "#5b7fb0"


def _svg(figure) -> str:
    """The figure as a ``data:`` URI of its SVG."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


@contextlib.contextmanager
def _figure(width: float, height: float) -> Iterator:
    """A matplotlib figure, drawn under fixed settings (text as paths, fixed SVG ids)."""
    require("matplotlib", "draw the charts of the HTML report")
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    with rc_context({"svg.fonttype": "path", "svg.hashsalt": "labelguard", "font.size": 9}):
        yield Figure(figsize=(width, height), dpi=96)


def value_chart(report) -> str | None:
    """Pixels per mask value (log scale), coloured by the verdict of the spec: a ``data:``
    URI, or None when the audit counted no mask values. The values holding the most pixels
    are drawn (as many as the text report lists)."""
    summary = report.summary
    found = summary.found_values()
    if not found:
        return None
    kept = sorted(sorted(found, key=lambda v: (-summary.value_pixels[v], v))[:LISTED])
    colours = []
    for value in kept:
        verdict = report.value_in_spec(value)
        colours.append(IGNORED if report.spec.is_ignored(value) else
                       {True: IN_SPEC, False: OUTSIDE, None: UNJUDGED}[verdict])
    labels = []
    for value in kept:
        name = report.spec.class_name(value) if not report.specs else None
        labels.append(f"{value}\n{printable(name)[:12]}" if name else str(value))
    with _figure(max(4.0, 0.45 * len(kept) + 1.5), 3.0) as figure:
        axes = figure.subplots()
        positions = range(len(kept))
        axes.bar(positions, [summary.value_pixels[v] for v in kept], color=colours)
        axes.set_yscale("log")
        axes.set_xticks(list(positions), labels, parse_math=False)
        axes.set_xlabel("mask value")
        axes.set_ylabel("pixels (log scale)")
        axes.set_title("Pixels per value: green in the spec, red outside"
                       f"{' (of a dataset)' if report.specs else ''}, grey ignored, blue not judged")
        for side in ("top", "right"):
            axes.spines[side].set_visible(False)
        return _svg(figure)


def class_chart(report) -> str | None:
    """Objects per class name (the most frequent first), red for names the spec lacks: a
    ``data:`` URI, or None when the audit counted no class names."""
    objects = report.summary.class_objects
    if not objects:
        return None
    ranked = sorted(objects, key=lambda name: (-objects[name], name))[:LISTED]
    names = set() if report.specs else set(report.spec.legal_class_names())
    colours = [UNJUDGED if not names else (IN_SPEC if name in names else OUTSIDE) for name in ranked]
    with _figure(6.0, max(2.0, 0.28 * len(ranked) + 1.0)) as figure:
        axes = figure.subplots()
        positions = range(len(ranked))
        axes.barh(positions, [objects[name] for name in ranked], color=colours)
        # A name is drawn as it is shown elsewhere, never read as mathtext ("$\\foo$" would
        # fail the report).
        axes.set_yticks(list(positions), [printable(name)[:24] for name in ranked], parse_math=False)
        axes.invert_yaxis()
        axes.set_xlabel("objects")
        axes.set_title("Objects per class: green in the spec, red not in it, blue not judged")
        for side in ("top", "right"):
            axes.spines[side].set_visible(False)
        return _svg(figure)
