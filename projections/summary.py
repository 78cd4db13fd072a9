"""The evening's summary `pitlog demo` prints: per table its profile, shoes, rounds and money,
and the anomalies by code."""

from __future__ import annotations

import duckdb

from projections.queries import Row, rows
from projections.reconcile import reconcile


def demo_summary(con: duckdb.DuckDBPyConnection) -> tuple[list[Row], list[Row]]:
    """Per table: profile, shoes, rounds and money; and the anomalies by code, when the
    `anomalies` view exists (it is built elsewhere on the read side).

    The money is reconcile()'s, the one query behind handle and net win everywhere (reconcile,
    conservation, the report): handle is what was in force at each decision, so a wager removed
    before its decision (WAGER_ALTERED) is not handle. Summing the `wagers` view instead counted
    it, and the demo once showed T01's handle $25.00 above reconcile's."""

    summary = rows(con, """
        SELECT s.table_id,
               (SELECT arg_max(profile, (seq, log_offset)) FROM events AS e
                WHERE e.table_id = s.table_id AND e.event_type = 'TableOpened') AS profile,
               count(*) AS shoes, sum(s.rounds)::BIGINT AS rounds,
               arg_min(s.shoe_id, s.opened_at) AS first_shoe
        FROM shoes AS s GROUP BY s.table_id ORDER BY s.table_id
    """)
    money = {r["table_id"]: r for r in reconcile(con, ["table"])}
    for r in summary:
        m = money.get(r["table_id"], {})
        r.update(handle_cents=m.get("handle_cents", 0), net_win_cents=m.get("net_win_cents", 0),
                 hold_pct=m.get("hold_pct"))
    has_anomalies = rows(con, "SELECT count(*) AS n FROM duckdb_views() "
                              "WHERE view_name = 'anomalies' AND NOT internal")[0]["n"]
    anomalies = rows(con, "SELECT code, count(*) AS count FROM anomalies "
                          "GROUP BY code ORDER BY code") if has_anomalies else []
    return summary, anomalies
