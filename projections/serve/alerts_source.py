"""The alerts table as the server reads it: projections.alerts (INCREMENTAL's module) when it
exists, else the contract's DDL and query, so /alerts works before and after it lands."""

from __future__ import annotations

from typing import Any

import duckdb

# The contract's DDL (LIVE.md, item 1), created only when the table is missing.
ALERTS_DDL = """
CREATE TABLE IF NOT EXISTS alerts (
    alert_seq BIGINT NOT NULL, alert_id VARCHAR NOT NULL, code VARCHAR, severity VARCHAR,
    table_id VARCHAR, shoe_id VARCHAR, round_no INTEGER, seqs BIGINT[], explanation VARCHAR,
    rule VARCHAR, occurred_at TIMESTAMPTZ, raised_at TIMESTAMPTZ)
"""


def ensure_alerts_table(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(ALERTS_DDL)


def alerts_after(con: duckdb.DuckDBPyConnection, after_seq: int,
                 limit: int = 1000) -> list[dict[str, Any]]:
    try:
        from projections.alerts import alerts_after as theirs
    except ImportError:
        pass
    else:
        return theirs(con, after_seq, limit)
    return con.sql("SELECT * FROM alerts WHERE alert_seq > $after ORDER BY alert_seq "
                   "LIMIT $limit", params={"after": after_seq, "limit": limit}
                   ).to_arrow_table().to_pylist()
