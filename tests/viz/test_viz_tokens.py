"""plot_tokens: text cut into tokens, drawn as rows of coloured boxes."""

import matplotlib
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from tensorlib.viz import figures, plot_token_lengths, plot_tokens
from tensorlib.viz.tokens import TOKEN_COLOURS, shown_token

from helpers import rendered_without_warnings


@pytest.fixture(autouse=True, scope="module")
def non_interactive_backend():
    """Tests only: the library builds Figures without pyplot and never picks a backend."""
    matplotlib.use("Agg")


def boxes(axes):
    return [patch for patch in axes.patches if isinstance(patch, Rectangle)]


def texts(axes):
    return [text.get_text() for text in axes.texts]


# ------------------------------------------------------------------------- how tokens show
def test_whitespace_is_made_visible():
    assert shown_token(" the") == "\u00b7the"
    assert shown_token(b"  x") == "\u00b7\u00b7x"
    assert shown_token(b"):\n") == "):\u21b5"
    assert shown_token("\tx") == "\u2192x"
    assert shown_token("a\rb") == "a<U+000D>b"  # any other unseen character: its code point


def test_bytes_decode_as_utf8_and_partial_characters_show_in_hex():
    assert shown_token(" \u00fcber".encode()) == "\u00b7\u00fcber"
    quote = "\u2019".encode()  # three bytes: e2 80 99
    assert shown_token(quote[:2]) == "<e2 80>"
    assert shown_token(quote[2:]) == "<99>"
    assert shown_token(b"s" + quote[:1]) == "s<e2>"
    assert shown_token(b"\x80\x80a") == "<80 80>a"  # adjacent bad bytes read as one run
    assert shown_token(b"") == ""


def test_characters_missing_from_the_font_show_as_code_points():
    assert shown_token("\u6771\u4eac") == "<U+6771 U+4EAC>"
    assert shown_token("\U0001f600".encode()) == "<U+1F600>"
    assert shown_token("a \u6771") == "a\u00b7<U+6771>"
    moscow = "\u041c\u043e\u0441\u043a\u0432\u0430"  # Cyrillic: in the font
    assert shown_token(moscow.encode()) == moscow


# ------------------------------------------------------------------------------ the picture
def test_one_box_per_token_with_its_text_and_counts():
    rows = [["The", " mer", "ges", " happen"], [b"def", b" f", b"(x", b"):", b"\n"]]
    figure = plot_tokens(rows, labels=["English", "code"], title="tokens")
    assert isinstance(figure, Figure)
    assert figure.get_figwidth() <= figures.NOTEBOOK_FIGURE_WIDTH
    (axes,) = figure.axes
    drawn = boxes(axes)
    assert len(drawn) == 9
    shown = texts(axes)
    for text in ["The", "\u00b7mer", "ges", "\u00b7happen", "def", "\u00b7f", "(x", "):",
                 "\u21b5", "English", "code", "4 tokens", "5 tokens", "tokens"]:
        assert text in shown
    # Neighbours differ in colour; the colours cycle deterministically from each row's start.
    colours = [matplotlib.colors.to_hex(box.get_facecolor()) for box in drawn]
    assert colours[:4] == list(TOKEN_COLOURS[:4]) and colours[4:] == list(TOKEN_COLOURS[:5])
    # Boxes of a row sit side by side, left to right on one line.
    first_row = drawn[:4]
    for left, right in zip(first_row[:-1], first_row[1:], strict=True):
        assert right.get_x() == pytest.approx(left.get_x() + left.get_width())
        assert right.get_y() == left.get_y()
    rendered_without_warnings(figure)


def test_same_tokens_give_the_same_picture():
    rows = [["a", "b"], ["c"]]
    first, second = plot_tokens(rows), plot_tokens(rows)
    assert texts(first.axes[0]) == texts(second.axes[0])
    assert ([(b.get_x(), b.get_y(), b.get_facecolor()) for b in boxes(first.axes[0])]
            == [(b.get_x(), b.get_y(), b.get_facecolor()) for b in boxes(second.axes[0])])


def test_cjk_emoji_and_partial_bytes_render_without_warnings():
    emoji = "\U0001f600".encode()
    rows = [["\u6771\u4eac", " ", emoji[:2], emoji[2:], "\U0001f600"],
            ["Stra\u00dfe".encode(), " \u041c\u043e\u0441\u043a\u0432\u0430".encode()]]
    figure = plot_tokens(rows, labels=["\u65e5 emoji", "German"])
    shown = texts(figure.axes[0])
    assert "<U+6771 U+4EAC>" in shown and "<f0 9f>" in shown and "<98 80>" in shown
    assert "<U+65E5> emoji" in shown  # labels get the same care (spaces stay spaces)
    rendered_without_warnings(figure)


def test_a_long_row_wraps_onto_more_lines_and_a_taller_figure():
    short = plot_tokens([["word", " word"]])
    long_row = ["word", " word"] * 40
    wrapped = plot_tokens([long_row], labels=["long"])
    drawn = boxes(wrapped.axes[0])
    assert len(drawn) == 80
    assert len({box.get_y() for box in drawn}) >= 3  # lines of one row
    assert wrapped.get_figheight() > short.get_figheight()
    assert wrapped.get_figwidth() <= figures.NOTEBOOK_FIGURE_WIDTH
    assert texts(wrapped.axes[0]).count("long") == 1  # the label on the first line only
    # every box lies inside the axes
    right = wrapped.axes[0].get_xlim()[1]
    assert all(box.get_x() + box.get_width() <= right for box in drawn)
    rendered_without_warnings(wrapped)


def test_a_token_wider_than_a_line_is_cut_into_boxes():
    figure = plot_tokens([["x" * 300, "y"]])
    drawn = boxes(figure.axes[0])
    assert len(drawn) >= 4  # three or more pieces of the long token, and "y"
    assert "".join(texts(figure.axes[0])[1:]) == "x" * 300 + "y"  # after the count
    assert len({box.get_facecolor() for box in drawn[:-1]}) == 1


def test_narrower_figures_wrap_sooner():
    rows = [["token", " after", " token"] * 10]
    wide, narrow = plot_tokens(rows), plot_tokens(rows, width=4.0)
    assert narrow.get_figwidth() == 4.0
    assert plot_tokens(rows, width=50).get_figwidth() == figures.NOTEBOOK_FIGURE_WIDTH
    assert len({b.get_y() for b in boxes(narrow.axes[0])}) > len(
        {b.get_y() for b in boxes(wide.axes[0])})


def test_empty_rows_and_tokens_are_drawn():
    figure = plot_tokens([[], ["", "a"]], labels=["none", "two"])
    assert len(boxes(figure.axes[0])) == 2
    assert "0 tokens" in texts(figure.axes[0]) and "2 tokens" in texts(figure.axes[0])


def test_long_labels_are_cut():
    figure = plot_tokens([["a"]], labels=["a label far longer than the margin allows"])
    assert "a label far lon\u2026" in texts(figure.axes[0])


def test_math_signs_stay_plain_text():
    figure = plot_tokens([["$x$", " costs", " $5", " and", " $6"]])
    assert "$x$" in texts(figure.axes[0])
    rendered_without_warnings(figure)


def test_draws_into_given_axes():
    figure = Figure(figsize=(8, 3))
    left, right = figure.subplots(1, 2)
    assert plot_tokens([["a", "b", "c"]], labels=["abc"], ax=right, title="here") is figure
    assert len(boxes(right)) == 3 and not boxes(left)
    assert right.get_title() == "here"
    rendered_without_warnings(figure)


# ------------------------------------------------------------------------------ bad input
def test_bad_input_raises_clear_errors():
    with pytest.raises(TypeError, match=r"row 0, token 1.*int 42"):
        plot_tokens([["a", 42]])
    with pytest.raises(TypeError, match=r"row 1 .*str 'hello'"):
        plot_tokens([["a"], "hello"])
    with pytest.raises(TypeError, match="row 0 .*int"):
        plot_tokens([7])
    with pytest.raises(TypeError, match="rows must be"):
        plot_tokens("hello")
    with pytest.raises(ValueError, match="empty"):
        plot_tokens([])
    with pytest.raises(ValueError, match="2 labels for 1 rows"):
        plot_tokens([["a"]], labels=["x", "y"])
    with pytest.raises(ValueError, match="too narrow"):
        plot_tokens([["a"]], width=1.0)
    with pytest.raises(TypeError, match="Axes"):
        plot_tokens([["a"]], ax="axes")


def test_token_lengths_are_counted_in_bytes_one_bar_per_length():
    figure = plot_token_lengths([b"a", b"b", b"ab", "é", b"abcd"], title="lengths")
    axes = figure.axes[0]
    bars = {round(bar.get_x() + bar.get_width() / 2): bar.get_height() for bar in axes.patches}
    assert bars == {1: 2, 2: 2, 4: 1}  # "é" is two bytes
    assert axes.get_title() == "lengths" and figure.get_size_inches()[0] <= \
        figures.NOTEBOOK_FIGURE_WIDTH


def test_token_lengths_refuse_what_is_not_a_token():
    with pytest.raises(TypeError, match="token 1: expected str or bytes, got int 3"):
        plot_token_lengths([b"a", 3])
    with pytest.raises(ValueError, match="at least one token"):
        plot_token_lengths([])
