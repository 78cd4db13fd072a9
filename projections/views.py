"""The SQL views over the raw tables, kept in projections/sql/ where an auditor can read them.

The views are plain DuckDB SQL (no Python functions), so they work in any DuckDB client that
opens the file, and they are stored in the file itself. SQL_FILES below is the one list of the
.sql files and the order they are created in.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb

from events.errors import ProjectionError
from projections.reddog_macros import macros_sql

SQL_DIR = Path(__file__).with_name("sql")
VIEW_NAMES = ("timeline", "rack", "rounds", "shoes", "settlements", "wagers", "hands")

# The view files of projections/sql/, one per view family, created in this order: each may call
# the macros and select from the views of the files before it. First the shared macros, then the
# round views, the settlement ledger and paytables, the anomaly families (which read the ledger)
# and `anomalies`, their union.
VIEW_FILES = (
    "macros.sql",            # game order, a round's cards, the events of a table or shoe
    "timeline.sql",          # every event, read aloud
    "cards.sql",             # the discard rack; where a round's deciding card sits, a card's role
    "rounds.sql",            # void_allowed, rounds_of and `rounds`
    "shoes.sql",
    "wagers.sql",            # settlements and wagers
    "hands.sql",
    "intruders.sql",         # round_intruders_of: cards out where the rules allow none
    "ledger.sql",                # the settlement ledger and the paytable in force
    "anomalies_facts.sql",   # anomaly_round_facts and the macros the families share
    "anomalies_rounds_wagers.sql",   # the rounds family's parts, as table macros over its
    "anomalies_rounds_dealing.sql",  # round facts: wagers and raises, the dealing, how rounds
    "anomalies_rounds_closing.sql",  # ended (rack, cut card, faults, voids)
    "anomalies_rounds.sql",
    "anomalies_money.sql",
    "anomalies_shoes.sql",
    "anomalies_tables.sql",
    "anomalies_streams.sql",
    "anomalies_places.sql",
    "anomalies.sql",             # the union of the families, with each code's severity and rule
)
# Named queries that projections/reconcile.py runs; never created as views.
QUERY_FILES = ("reconcile.sql",)
SQL_FILES = VIEW_FILES + QUERY_FILES


def sql_path(name: str) -> Path:
    """The path of one of SQL_FILES."""
    if name not in SQL_FILES:
        raise ProjectionError(f"{name!r} is not one of projections/sql/'s files "
                              f"({', '.join(SQL_FILES)})")
    return SQL_DIR / name


def check_sql_dir(folder: Path = SQL_DIR) -> None:
    """A .sql file missing from `folder` (a packaging slip would drop its views, perhaps every
    anomaly) or one SQL_FILES does not name (a family written but never created) is a
    ProjectionError naming the files, never a store with views silently left out."""
    present = {p.name for p in folder.glob("*.sql")} if folder.is_dir() else set()
    missing = [n for n in SQL_FILES if n not in present]
    extra = sorted(present - set(SQL_FILES))
    if missing or extra:
        raise ProjectionError(
            f"{folder}: " + "; ".join(
                ([f"missing {', '.join(missing)}; reinstall pitlog"] if missing else []) +
                ([f"{', '.join(extra)} not in projections/views.py SQL_FILES; add it there "
                  f"in its load order"] if extra else [])))


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """CREATE OR REPLACE every view and macro on `con`: first the red dog macros generated
    from events/reddog/rules.py, then VIEW_FILES in order. A missing or unlisted .sql file is
    a ProjectionError naming it (check_sql_dir), never a store without its anomalies."""
    check_sql_dir(SQL_DIR)
    try:
        con.execute(macros_sql())
    except duckdb.Error as exc:
        raise ProjectionError(f"cannot create the red dog macros ({exc})") from exc
    for name in VIEW_FILES:
        path = SQL_DIR / name
        try:
            con.execute(path.read_text())
        except OSError as exc:
            raise ProjectionError(f"{path}: cannot read the view definitions ({exc}); "
                                  f"reinstall pitlog") from exc
        except duckdb.Error as exc:
            raise ProjectionError(f"{path}: cannot create the views ({exc})") from exc


# The table where a read-write file lists the views and macros ensure_views created.
FINGERPRINT_TABLE = "pitlog_views"
# Every view and macro of the file's main schema, with its comment. DuckDB drops an entry's
# comment when the entry is replaced (CREATE OR REPLACE) and drops it with the entry (DROP).
_CATALOG = """
SELECT 'view' AS kind, view_name AS name, comment FROM duckdb_views()
WHERE NOT internal AND NOT temporary AND database_name = current_database()
  AND schema_name = 'main'
UNION
SELECT function_type, function_name, comment FROM duckdb_functions()
WHERE NOT internal AND database_name = current_database() AND schema_name = 'main'
  AND function_type IN ('macro', 'table_macro')"""
_COMMENT_ON = {"view": "VIEW", "macro": "MACRO", "table_macro": "MACRO TABLE"}


def views_fingerprint(extra: str = "") -> str:
    """SHA-256 of everything create_views runs (the generated macros, then every VIEW_FILES text
    in order), DuckDB's version and `extra` (the caller's schema: the `events` columns). An
    upgraded pitlog, a new schema field or another DuckDB gives another fingerprint."""
    h = hashlib.sha256()
    for part in (f"duckdb {duckdb.__version__}", extra, macros_sql(),
                 *(f"{name}\n{(SQL_DIR / name).read_text()}" for name in VIEW_FILES)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _views_current(con: duckdb.DuckDBPyConnection, tag: str) -> bool:
    """Every view and macro ensure_views listed is there, still carrying `tag`, and the list
    holds at least VIEW_NAMES."""
    try:
        if con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = "
                       "current_database() AND schema_name = 'main' AND table_name = $t",
                       {"t": FINGERPRINT_TABLE}).fetchall() != [(1,)]:
            return False
        ((listed, views, stale),) = con.execute(
            f"SELECT count(*), count(*) FILTER (WHERE p.kind = 'view' AND p.name IN "
            f"({', '.join('?' * len(VIEW_NAMES))})), count(*) FILTER (WHERE c.comment IS "
            f"DISTINCT FROM ?) FROM {FINGERPRINT_TABLE} AS p "
            f"LEFT JOIN ({_CATALOG}) AS c USING (kind, name)", [*VIEW_NAMES, tag]).fetchall()
    except duckdb.Error:  # the list replaced by another table, a tiny memory_limit: made again
        return False
    return listed > 0 and views == len(VIEW_NAMES) and stale == 0


def ensure_views(con: duckdb.DuckDBPyConnection, extra: str = "") -> bool:
    """create_views unless the file already holds exactly these views; True when it ran.

    Re-creating every macro and view costs about a second, on every read-write open. After
    creating them, each view and macro of the main schema gets the comment `pitlog views <views_
    fingerprint>` (one a user commented otherwise keeps its comment and is not listed), and
    FINGERPRINT_TABLE lists them. They are created again when one listed is missing or carries
    another comment: a pitlog with other SQL or schemas, a view or macro dropped or replaced by
    hand (DuckDB drops the comment with the old entry), the list itself dropped or emptied. A
    missing or unlisted .sql file still fails loudly first (check_sql_dir), whatever the file
    holds."""
    check_sql_dir(SQL_DIR)
    try:
        tag = f"pitlog views {views_fingerprint(extra)}"
    except OSError as exc:
        raise ProjectionError(f"{SQL_DIR}: cannot read the view definitions ({exc}); "
                              f"reinstall pitlog") from exc
    if _views_current(con, tag):
        return False
    create_views(con)
    try:
        _tag_views(con, tag)
    except duckdb.Error:
        # E.g. a memory_limit too small for the catalog's query (the views themselves were
        # created): left untagged, they are created again at the next open.
        pass
    return True


def _tag_views(con: duckdb.DuckDBPyConnection, tag: str) -> None:
    ours = [(kind, name) for kind, name, comment in con.execute(_CATALOG).fetchall()
            if comment is None or comment.startswith("pitlog views ")]
    # No transaction of its own: a connection handed to project() may be inside the caller's
    # (a BEGIN there would abort it). The list comes last: an open stopped half-way leaves a
    # view without its tag, or no list, and the next open creates them all again.
    for kind, name in ours:
        quoted = '"' + name.replace('"', '""') + '"'
        # COMMENT takes no parameter; the tag is hex digits after a fixed text.
        con.execute(f"COMMENT ON {_COMMENT_ON[kind]} {quoted} IS '{tag}'")
    con.execute(f"CREATE OR REPLACE TABLE {FINGERPRINT_TABLE} "
                f"(kind VARCHAR NOT NULL, name VARCHAR NOT NULL)")
    con.executemany(f"INSERT INTO {FINGERPRINT_TABLE} VALUES (?, ?)", ours)


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
