"""How a tokenizer cuts text into tokens, as a picture (matplotlib).

:func:`plot_tokens` draws each row of tokens as a line of adjacent coloured boxes, one box per
token with the token's text inside, neighbouring boxes in a cycle of light colours so that the
boundaries show (as the "tiktokenizer" web page does). Each row may have a label on its left;
its token count is printed at the right margin. A row too long for the figure wraps onto
further lines. Nothing is hidden: a space shows as ``·``, a newline as ``↵``, a tab as ``→``;
a byte-level token that is not valid UTF-8 on its own (part of a multi-byte character) shows
its bytes in hex, ``<e2 80>``; a character the font cannot draw (CJK, most emoji) or cannot
show (other whitespace, control characters) shows its code point, ``<U+6771>``.

As every plot of :mod:`tensorlib.viz`, the figure is built without ``pyplot`` and is at most
:data:`~tensorlib.viz.figures.NOTEBOOK_FIGURE_WIDTH` inches wide; in Jupyter it displays as a
PNG.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties, findfont, get_font
from matplotlib.patches import Rectangle

from tensorlib.viz.figures import NOTEBOOK_FIGURE_WIDTH, figure_and_axes, new_figure

__all__ = ["plot_token_lengths", "plot_tokens", "shown_token"]

# A monospace font that ships with matplotlib, so every character is one cell wide everywhere.
FONT_FAMILY = "DejaVu Sans Mono"
# DejaVu Sans Mono's characters are 1233/2048 em wide; at this size, 9.57 pt, one is exactly
# 8 pixels at matplotlib's 100 dpi (16 at the 200 dpi of a retina notebook). Hinted text, whose
# characters are rounded to whole pixels, then lines up with its boxes however long it is.
FONT_SIZE = 8 * 72 / 100 / (1233 / 2048)  # points
LINE_HEIGHT = 2.0  # a line of boxes, in font sizes
BOX_HEIGHT = 0.8  # of a line
ROW_GAP = 0.45  # extra space between rows, in lines (wrapped lines of one row have none)
BOX_PADDING = 0.3  # characters of space each side of a token's text
MARGIN = 0.12  # inches above and below the rows
LABEL_LIMIT = 16  # characters of a label shown; longer labels are cut with "…"

# Light colours cycled along a row: any two neighbouring tokens differ.
TOKEN_COLOURS = ("#aecbeb", "#ffd6a5", "#b9e4b4", "#f8bfcb", "#d5c6f2", "#fff0a6")
COUNT_COLOUR = "0.4"

# What stands for the whitespace a token would otherwise hide.
VISIBLE_WHITESPACE = {" ": "\u00b7", "\n": "\u21b5", "\t": "\u2192"}  # · ↵ →


def _font() -> FontProperties:
    return FontProperties(family=FONT_FAMILY, size=FONT_SIZE)


@functools.lru_cache(maxsize=4096)
def _has_glyph(character: str) -> bool:
    """Whether the token font draws ``character`` (else matplotlib warns "Glyph ... missing")."""
    font = get_font(findfont(_font()))
    return font.get_char_index(ord(character)) != 0


@functools.lru_cache(maxsize=1)
def _character_width() -> float:
    """Inches of one character of the token font (it is monospace: all have this width)."""
    from matplotlib.textpath import TextToPath

    width, _, _ = TextToPath().get_text_width_height_descent("M" * 100, _font(), ismath=False)
    return width / 100 / 72


def _show_text(text: str, whitespace: bool = True) -> str:
    """``text`` with spaces, newlines and tabs made visible if ``whitespace`` (else spaces
    stay spaces: a label), and anything else that would not show written as code points."""
    pieces: list[str] = []
    unshown: list[str] = []  # a run of code points, written together as <U+6771 U+4EAC>
    for character in text:
        if whitespace and character in VISIBLE_WHITESPACE:
            shown = VISIBLE_WHITESPACE[character]
        elif not whitespace and character == " ":
            shown = character
        elif character.isprintable() and not character.isspace() and _has_glyph(character):
            shown = character
        else:
            unshown.append(f"U+{ord(character):04X}")
            continue
        if unshown:
            pieces.append(f"<{' '.join(unshown)}>")
            unshown = []
        pieces.append(shown)
    if unshown:
        pieces.append(f"<{' '.join(unshown)}>")
    return "".join(pieces)


def _hex(data: bytes) -> str:
    return f"<{' '.join(f'{byte:02x}' for byte in data)}>"


def shown_token(token: str | bytes) -> str:
    """The text drawn for one token.

    ``bytes`` are decoded as UTF-8; bytes that are not valid UTF-8 where they stand (a piece
    of a multi-byte character) are written in hex, ``b"\\xe2\\x80"`` as ``<e2 80>``, and
    ``b"a\\xe2"`` as ``a<e2>``. Then a space becomes ``·``, a newline ``↵``, a tab ``→``, and
    any other character that would not show (other whitespace, control characters, characters
    missing from the font such as CJK or emoji) its code point, ``東`` as ``<U+6771>``.
    """
    if isinstance(token, str):
        return _show_text(token)
    data = bytes(token)
    pieces: list[str] = []
    invalid = b""  # bad bytes not yet written: adjacent runs read as one, <e2 80 99>
    while data:
        try:
            text, data = data.decode("utf-8"), b""
        except UnicodeDecodeError as error:  # decode the valid start, keep the bad bytes
            text = data[:error.start].decode("utf-8")
            bad, data = data[error.start:error.end], data[error.end:]
        else:
            bad = b""
        if text and invalid:
            pieces.append(_hex(invalid))
            invalid = b""
        pieces.append(_show_text(text))
        invalid += bad
    if invalid:
        pieces.append(_hex(invalid))
    return "".join(pieces)


def _checked_rows(rows: Iterable[Sequence[str | bytes]]) -> list[list[str | bytes]]:
    """``rows`` as lists of tokens; TypeError naming the first thing that is not a token."""
    if isinstance(rows, (str, bytes, bytearray)):
        raise TypeError(f"rows must be a sequence of rows of tokens, got the "
                        f"{type(rows).__name__} {rows!r}; wrap it: [[token, ...], ...]")
    checked = []
    for index, row in enumerate(rows):
        if isinstance(row, (str, bytes, bytearray)):
            raise TypeError(f"row {index} must be a sequence of tokens (str or bytes), got the "
                            f"{type(row).__name__} {row!r}; split it into tokens first")
        try:
            tokens = list(row)
        except TypeError:
            raise TypeError(f"row {index} must be a sequence of tokens (str or bytes), got "
                            f"{type(row).__name__} {row!r}") from None
        for position, token in enumerate(tokens):
            if not isinstance(token, (str, bytes, bytearray)):
                raise TypeError(f"row {index}, token {position}: a token must be str or "
                                f"bytes, got {type(token).__name__} {token!r}")
        checked.append(tokens)
    if not checked:
        raise ValueError("rows is empty: nothing to draw")
    return checked


def _count_text(count: int) -> str:
    return f"{count} token" if count == 1 else f"{count} tokens"


def _shown_label(label: str) -> str:
    """``label`` as drawn: cut to :data:`LABEL_LIMIT` characters, what the font lacks as code
    points."""
    label = _show_text(str(label), whitespace=False)
    return label if len(label) <= LABEL_LIMIT else label[:LABEL_LIMIT - 1] + "\u2026"


def _layout(rows: list[list[str]], first: float, last: float
            ) -> tuple[list[list[tuple[int, float, float, str, int]]], list[int]]:
    """Where each token's box goes, with boxes between columns ``first`` and ``last``
    (in characters): per row, (line within the row, x, width, text, token index) per box,
    and the number of lines of each row. A token wider than a whole line is cut into boxes
    of one line each (same colour); any other token that does not fit starts a new line."""
    room = max(1, int(last - first - 2 * BOX_PADDING))  # characters a box's text may hold
    boxes: list[list[tuple[int, float, float, str, int]]] = []
    line_counts = []
    for row in rows:
        placed: list[tuple[int, float, float, str, int]] = []
        line, x = 0, first
        for index, text in enumerate(row):
            chunks = [text[start:start + room] for start in range(0, len(text), room)] or [""]
            for chunk in chunks:
                width = max(len(chunk), 1) + 2 * BOX_PADDING
                if x + width > last + 1e-9 and x > first:
                    line, x = line + 1, first
                placed.append((line, x, width, chunk, index))
                x += width
        boxes.append(placed)
        line_counts.append(line + 1)
    return boxes, line_counts


def plot_tokens(rows: Iterable[Sequence[str | bytes]], *,
                labels: Sequence[str] | None = None, title: str | None = None,
                ax: Axes | None = None, width: float = NOTEBOOK_FIGURE_WIDTH) -> Figure:
    """Each row of tokens as a line of adjacent coloured boxes, one per token, its text inside.

    ``rows`` is a sequence of rows, each a sequence of tokens: ``bytes`` (a byte-level BPE
    token, possibly part of a UTF-8 character) or ``str``. A token shows as
    :func:`shown_token` writes it: a space as ``·``, a newline as ``↵``, a tab as ``→``,
    bytes that are not valid UTF-8 in hex (``<e2 80>``), characters the font lacks (CJK,
    emoji) as code points (``<U+6771>``), so that nothing is hidden and matplotlib never warns
    of a missing glyph. Neighbouring tokens take the next of six light colours
    (:data:`TOKEN_COLOURS`, restarting at each row), so the same tokens always give the same
    picture. ``labels``, one per row, are printed on the left of each row's first line; each
    row's token count ("12 tokens") at the right margin.

    Text is monospace, 9.57 pt. A row wider than the figure wraps onto further lines (the
    figure grows taller); a single token wider than a whole line is cut into several boxes of
    its colour. The figure is ``width`` inches wide, at most
    :data:`~tensorlib.viz.figures.NOTEBOOK_FIGURE_WIDTH` (the default). Given ``ax``, the
    picture is drawn into it instead, wrapping at the axes' width, and its lines are spread
    over the axes' height: give it about 0.3 inches per line (``width`` is then unused).
    Returns the figure.

    Raises TypeError naming the value when a row is not a sequence of str/bytes tokens (a
    bare str is not taken for a row of characters), ValueError when ``rows`` is empty or
    ``labels`` does not give one label per row.
    """
    token_rows = _checked_rows(rows)
    shown_rows = [[shown_token(token) for token in row] for row in token_rows]
    if labels is not None:
        labels = [_shown_label(label) for label in labels]
        if len(labels) != len(token_rows):
            raise ValueError(f"{len(labels)} labels for {len(token_rows)} rows: give one "
                             f"label per row")
    character = _character_width()
    line_height = LINE_HEIGHT * FONT_SIZE / 72  # inches
    if ax is None:
        width = min(float(width), NOTEBOOK_FIGURE_WIDTH)
        axes_width = width
    else:  # wrap at the width the axes have now
        figure, axes = figure_and_axes(ax, (width, 1.0))
        axes_width = axes.get_position().width * figure.get_figwidth()
    columns = axes_width / character  # characters across the axes: the x unit is one

    # Columns: [label] [boxes ...] [count], with space between and half a character outside.
    label_length = max((len(label) for label in labels), default=0) if labels else 0
    count_length = max(len(_count_text(len(row))) for row in token_rows)
    first = label_length + 1.5 if labels else 0.5
    last = columns - count_length - 1.5
    if last - first < 4 + 2 * BOX_PADDING:
        raise ValueError(f"{axes_width:.2f} inches is too narrow to draw tokens next to "
                         f"labels of {label_length} characters")
    boxes, line_counts = _layout(shown_rows, first, last)

    # Heights in lines (the y unit is one line, growing downwards).
    title_lines = 1.3 if title and ax is None else 0.0
    margin = MARGIN / line_height
    tops = []  # the top of each row
    y = margin + title_lines
    for lines in line_counts:
        tops.append(y)
        y += lines + ROW_GAP
    height = y - ROW_GAP + margin

    if ax is None:
        figure = new_figure((width, height * line_height))
        figure.set_layout_engine("none")  # laid out here, in inches: one axes fills it
        axes = figure.add_axes((0.0, 0.0, 1.0, 1.0))
    axes.set_xlim(0, columns)
    axes.set_ylim(height, 0)
    axes.set_axis_off()
    if title:
        if ax is None:
            axes.text(columns / 2, margin + title_lines / 2, title, ha="center",
                      va="center", fontsize=12)
        else:
            axes.set_title(title)

    font = _font()
    for row_index, (placed, top) in enumerate(zip(boxes, tops, strict=True)):
        centre = top + 0.5  # of the row's first line
        if labels:
            axes.text(first - 0.7, centre, labels[row_index], ha="right",
                      va="center_baseline", fontproperties=font, weight="bold",
                      parse_math=False)
        axes.text(columns - 0.5, centre, _count_text(len(token_rows[row_index])), ha="right",
                  va="center_baseline", fontproperties=font, color=COUNT_COLOUR,
                  parse_math=False)
        for line, x, box_width, text, token_index in placed:
            box_top = top + line + (1 - BOX_HEIGHT) / 2
            axes.add_patch(Rectangle((x, box_top), box_width, BOX_HEIGHT,
                                     facecolor=TOKEN_COLOURS[token_index % len(TOKEN_COLOURS)],
                                     edgecolor="white", linewidth=0.8))
            axes.text(x + box_width / 2, top + line + 0.5, text, ha="center",
                      va="center_baseline", fontproperties=font, parse_math=False)
    return figure


def plot_token_lengths(tokens: Iterable[str | bytes], *, title: str | None = None,
                       ax: Axes | None = None) -> Figure:
    """A bar per length: how many of ``tokens`` (a vocabulary's values, say) are 1, 2, 3...
    bytes long (a ``str`` token counts its UTF-8 bytes). Returns the figure."""
    counts: dict[int, int] = {}
    for index, token in enumerate(tokens):
        if isinstance(token, str):
            token = token.encode("utf-8")
        if not isinstance(token, (bytes, bytearray)):
            raise TypeError(f"token {index}: expected str or bytes, got "
                            f"{type(token).__name__} {token!r}")
        counts[len(token)] = counts.get(len(token), 0) + 1
    if not counts:
        raise ValueError("plot_token_lengths needs at least one token")
    figure, axes = figure_and_axes(ax, (4.6, 3.4))
    lengths = sorted(counts)
    axes.bar(lengths, [counts[length] for length in lengths], color="C1")
    axes.set_xlabel("bytes in the token")
    axes.set_ylabel("tokens")
    axes.grid(True, axis="y", alpha=0.3)
    if title:
        axes.set_title(title)
    return figure
