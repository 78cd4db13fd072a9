"""The SQL views over the raw tables, kept in views.sql where an auditor can read them.

The views are plain DuckDB SQL (no Python functions), so they work in any DuckDB client that
opens the file, and they are stored in the file itself.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import duckdb

from events.errors import ProjectionError
from projections.reddog_macros import macros_sql

VIEWS_SQL = Path(__file__).with_name("views.sql")
VIEW_NAMES = ("timeline", "rack", "rounds", "shoes", "settlements", "wagers", "hands")


@cache
def views_sql() -> str:
    return VIEWS_SQL.read_text()


# Views kept in files of their own, created after views.sql in this order (each may select from
# the views before it): the settlement ledger and paytables, then the anomalies (which read them).
MORE_SQL = tuple(VIEWS_SQL.with_name(name) for name in ("ledger.sql", "anomalies.sql"))


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """CREATE OR REPLACE every view and macro on `con`: first the red dog macros generated
    from events/reddog/rules.py, then the .sql files. A missing .sql file (a packaging slip)
    is a ProjectionError naming it, never a store without its anomalies."""
    try:
        con.execute(macros_sql())
    except duckdb.Error as exc:
        raise ProjectionError(f"cannot create the red dog macros ({exc})") from exc
    for path in (VIEWS_SQL, *MORE_SQL):
        try:
            con.execute(views_sql() if path == VIEWS_SQL else path.read_text())
        except OSError as exc:
            raise ProjectionError(f"{path}: cannot read the view definitions ({exc}); "
                                  f"reinstall pitlog") from exc
        except duckdb.Error as exc:
            raise ProjectionError(f"{path}: cannot create the views ({exc})") from exc


def digest_views(con: duckdb.DuckDBPyConnection,
                 names: tuple[str, ...] | None = None) -> dict[str, tuple[int, str]]:
    """(row count, MD5 over the sorted MD5s of every row) per view (default: every view in
    the database): a fingerprint of the views' contents, to check that a rebuild or a restart
    gave the same views (docs/architecture.md, principle 3). Timestamps are rendered in the
    session's time
    zone, so compare digests taken with the same TimeZone setting."""
    known = {v for (v,) in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    out: dict[str, tuple[int, str]] = {}
    for name in sorted(known) if names is None else names:
        if name not in known:  # also keeps anything but a view's name out of the SQL below
            raise ProjectionError(f"no view {name!r}; the views are {', '.join(sorted(known))}")
        ((count, digest),) = con.execute(
            f"SELECT count(*), coalesce(md5(string_agg(h, '' ORDER BY h)), '') "
            f'FROM (SELECT md5(CAST(t AS VARCHAR)) AS h FROM "{name}" AS t)').fetchall()
        out[name] = (count, digest)
    return out
