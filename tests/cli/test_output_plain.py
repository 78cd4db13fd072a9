"""cli/output.py writes a table's plain text itself (`_plain_table`, issue 19 item 4: rich's
per-cell measuring made replaying a long shoe slow) exactly as rich draws it, byte for byte,
folded or wrapped cells included, and leaves to rich what it cannot match (styles, wide
characters). Structural, not timed."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli import output
from cli.output import Format, render

# Printable ASCII with spaces, some control characters (shown as escapes) and letters that are
# not ASCII (é one cell, 漢 two): the last two kinds must go to rich.
_ASCII = "abcXYZ019 -:._/"
_TEXT = st.one_of(st.text(alphabet=_ASCII, max_size=34),
                  st.text(alphabet=st.sampled_from([*_ASCII, "\x1b", "\t", "é", "漢"]),
                          max_size=34))


def _drawn(rows: list[dict[str, Any]], title: str | None, columns: int,
           plain: bool, capsys: pytest.CaptureFixture[str]) -> tuple[str, bool]:
    """What render writes, and whether the plain writer took it (plain=False: rich's own)."""
    taken = []
    real = output._plain_table

    def spy(*args: object) -> bool:
        done = plain and real(*args)  # type: ignore[arg-type]
        taken.append(done)
        return done

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", str(columns))
        mp.delenv("FORCE_COLOR", raising=False)
        mp.setattr(output, "_plain_table", spy)
        capsys.readouterr()
        render(rows, Format.table, title=title, columns=list(rows[0]))
        return capsys.readouterr().out, taken == [True]


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # read out each time
@given(heads=st.lists(st.text(alphabet="abcdefgh_", min_size=1, max_size=12)
                      | st.text(alphabet="abcdefgh_\x07é", min_size=1, max_size=12),
                      min_size=1, max_size=6, unique=True),
       cells=st.lists(st.lists(st.one_of(st.none(), _TEXT), min_size=6, max_size=6),
                      min_size=1, max_size=8),
       title=st.one_of(st.none(), _TEXT.filter(bool)),
       columns=st.integers(min_value=20, max_value=160))
def test_plain_table_is_richs_table(heads: list[str], cells: list[list[str | None]],
                                    title: str | None, columns: int,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    rows = [dict(zip(heads, row, strict=False)) for row in cells]
    ours, taken = _drawn(rows, title, columns, True, capsys)
    richs, _ = _drawn(rows, title, columns, False, capsys)
    assert ours == richs


def test_a_table_that_fits_is_written_plain(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"seq": str(i), "event": "CardDrawn", "card": "Q♥"[0] + "H"} for i in range(3)]
    ours, taken = _drawn(rows, "shoe T01-S0001: events", 100, True, capsys)
    assert taken
    assert ours == _drawn(rows, "shoe T01-S0001: events", 100, False, capsys)[0]
    assert ours.splitlines() == [
        "  shoe T01-S0001: events  ",
        "┏━━━━━┳━━━━━━━━━━━┳━━━━━━┓",
        "┃ seq ┃ event     ┃ card ┃",
        "┡━━━━━╇━━━━━━━━━━━╇━━━━━━┩",
        "│ 0   │ CardDrawn │ QH   │",
        "│ 1   │ CardDrawn │ QH   │",
        "│ 2   │ CardDrawn │ QH   │",
        "└─────┴───────────┴──────┘",
    ]


def test_a_narrow_terminal_folds_and_wraps_as_rich(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"rack_position_in_dealing": str(i), "description": "a long text " * 5,
             "code": "X" * 30} for i in range(3)]
    ours, taken = _drawn(rows, "hands", 40, True, capsys)
    assert taken
    assert ours == _drawn(rows, "hands", 40, False, capsys)[0]
    assert len(ours.splitlines()) > 2 + 3 + 2  # the header and the cells take more lines


@pytest.mark.parametrize("text", ["漢字", "é"])
def test_wide_or_accented_text_goes_to_rich(text: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    ours, taken = _drawn([{"a": text}], None, 100, True, capsys)
    assert not taken
    assert ours == _drawn([{"a": text}], None, 100, False, capsys)[0]


def test_a_long_word_in_a_narrow_text_column_is_folded_never_cut(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`pitlog verify` or `replay` at 80 columns cut the words of an explanation wider than its
    column with an ellipsis ("its prev…"): evidence lost, not folded onto more lines as the
    short columns are (docs/console.md: long texts fold instead of being cut)."""
    word = "prev_hash_of_the_previous_record"
    rows = [{"code": "CHAIN_BROKEN", "partition": "0", "offset": "127",
             "explanation": f"its {word} is not the hash of seq 127"}]
    for plain in (True, False):
        out, _ = _drawn(rows, "integrity anomalies", 40, plain, capsys)
        assert "…" not in out
        column = "".join(line.split("│")[-2].strip() for line in out.splitlines()
                         if line.startswith("│"))
        assert word in column  # every character of it, across the folded lines


def test_more_columns_than_a_terminal_can_draw_show_every_value(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`pitlog sql "SELECT * FROM ledger"` at 80 columns: 54 columns, 3 characters of borders
    each, left rich no room for any text: every cell was drawn empty. Such rows are shown one
    table per row, a line per column, within the terminal."""
    rows = [{f"column_{i:02d}": f"value-{n}-{i}" for i in range(30)} for n in range(2)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", "80")
        mp.delenv("FORCE_COLOR", raising=False)
        capsys.readouterr()
        render(rows, Format.table, title="ledger", columns=list(rows[0]))
        out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    for n in range(2):
        assert f"ledger: row {n + 1} of 2" in out
        for i in range(30):
            assert re.search(rf"│ column_{i:02d} +│ value-{n}-{i} +│", out), (n, i)


def test_a_newline_starts_a_line_of_its_cell_only_where_asked(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`pitlog sql` (line_breaks): EXPLAIN's plan and a multi-line text show their lines; every
    other control character stays an escape, and every other command shows `\\x0a` (a device's
    string, shown as it was sent)."""
    rows = [{"key": "plan", "value": "line one\nline \x1b[31mtwo"}]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", "60")
        capsys.readouterr()
        render(rows, Format.table, line_breaks=True)
        broken = capsys.readouterr().out.splitlines()
        render(rows, Format.table)
        escaped = capsys.readouterr().out.splitlines()
    assert broken[3:6] == ["│ plan │ line one         │",
                           "│      │ line \\x1b[31mtwo │",
                           "└──────┴──────────────────┘"]
    assert escaped[3] == "│ plan │ line one\\x0aline \\x1b[31mtwo │"
    # A second row: a rule between rows, so a cell's next line is never read as a row (a
    # device's "T01\nT99" looked like two tables).
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", "60")
        render([{"table_id": "T01\nT99", "n": 5}, {"table_id": "T02", "n": 6}], Format.table,
               line_breaks=True)
        assert capsys.readouterr().out.splitlines()[3:8] == [
            "│ T01      │ 5 │", "│ T99      │   │", "├──────────┼───┤", "│ T02      │ 6 │",
            "└──────────┴───┘"]


def test_columns_too_wide_together_are_shown_in_blocks_with_every_value_whole(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`pitlog shoes` or `reconcile` at 80 columns folded "$43,375.00" into "$43,3" over
    "75.00" and a date into "2026-11" over "-28": now a block of columns at a time, each value
    on one line, each block repeating the leading columns that name a row."""
    rows = [{"table_id": "T01", "shoe_id": f"T01-S000{n}", "handle": f"${n}43,375.00",
             "net_win": f"-${n},440.00", "opened_at": f"2026-11-2{n} 23:00:53 UTC",
             "closed_at": f"2026-11-2{n} 23:38:13 UTC", "rounds": str(80 + n),
             "dealers": f"D-T01-{n} D-T01-{n + 1}"} for n in range(1, 4)]
    for plain in (True, False):
        out, _ = _drawn(rows, "shoes", 80, plain, capsys)
        lines = out.splitlines()
        assert max(len(line) for line in lines) <= 80
        parts = [line.strip() for line in lines if "shoes (part" in line]
        assert parts == ["shoes (part 1 of 2)", "shoes (part 2 of 2)"]
        heads = [[h.strip() for h in line.strip("┃").split("┃")] for line in lines
                 if line.startswith("┃")]
        # T01 alone names no row: the table and the shoe lead each block
        assert [h[:2] for h in heads] == [["table_id", "shoe_id"]] * 2
        assert sorted(h for block in heads for h in block[2:]) == sorted(list(rows[0])[2:])
        cells = [[c.strip() for c in line.strip("│").split("│")] for line in lines
                 if line.startswith("│")]
        assert len(cells) == 6  # three rows a block, none folded onto a second line
        for block, head in zip((cells[:3], cells[3:]), heads, strict=True):
            assert [dict(zip(head, row, strict=True)) for row in block] == \
                [{h: r[h] for h in head} for r in rows]


def test_a_table_id_that_names_each_row_leads_each_block_alone(
        capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"table_id": f"T0{n}", "rounds": "289", **{f"money_{i}": f"${n}4,715.00"
                                                       for i in range(8)}} for n in range(3)]
    out, _ = _drawn(rows, "reconciliation", 80, True, capsys)
    heads = [[h.strip() for h in line.strip("┃").split("┃")] for line in out.splitlines()
             if line.startswith("┃")]
    assert len(heads) == 2 and all(h[0] == "table_id" and h[1] != "table_id" for h in heads)
    assert sum(len(h) - 1 for h in heads) == len(rows[0]) - 1
