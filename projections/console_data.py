"""What the surveillance console's pages read that no other query gives: the recent alerts with
filters, and a shoe replay whose events carry their cards as data (the page builds the hand and
the rack from them, card by card). Everything else comes from the library functions the CLI and
the API use (dispute, replay_shoe, the API's tables query).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb

from events.reddog.catalogue import SEVERITIES as RISING
from projections.queries import rows
from projections.replay import replay_shoe

Row = dict[str, Any]

_ALERT_COLUMNS = ("alert_seq, alert_id, code, severity, table_id, shoe_id, round_no, seqs, "
                  "explanation, rule, occurred_at, raised_at")

SEVERITIES = tuple(reversed(RISING))  # the console lists the worst first

_RECENT = f"""
SELECT {_ALERT_COLUMNS} FROM alerts
WHERE ($table IS NULL OR table_id = $table) AND ($code IS NULL OR code = $code)
  AND ($severity IS NULL OR severity = $severity)
ORDER BY alert_seq DESC
LIMIT $limit
"""

_ALERT = f"SELECT {_ALERT_COLUMNS} FROM alerts WHERE alert_seq = $seq"

_CHOICES = """
SELECT list(DISTINCT table_id ORDER BY table_id) AS tables,
       list(DISTINCT code ORDER BY code) AS codes
FROM alerts
"""


@dataclass(frozen=True, slots=True)
class AlertFilter:
    table: str | None = None
    code: str | None = None
    severity: str | None = None


def recent_alerts(con: duckdb.DuckDBPyConnection, f: AlertFilter, limit: int = 200) -> list[Row]:
    """The newest alerts first (at most `limit`), filtered by table, code and severity."""
    return rows(con, _RECENT, {"table": f.table, "code": f.code, "severity": f.severity,
                               "limit": limit})


def alert(con: duckdb.DuckDBPyConnection, alert_seq: int) -> Row | None:
    found = rows(con, _ALERT, {"seq": alert_seq})
    return found[0] if found else None


def last_alert_seq(con: duckdb.DuckDBPyConnection) -> int:
    """The newest alert's alert_seq (0 when none): where a page's live stream starts."""
    ((n,),) = con.execute("SELECT coalesce(max(alert_seq), 0) FROM alerts").fetchall()
    return int(n)


def alert_choices(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[str]]:
    """The tables and codes that have alerts: the filters' options."""
    (r,) = rows(con, _CHOICES)
    return list(r["tables"] or []), list(r["codes"] or [])


# The cards each event of the shoe moves, as data: the card drawn, burnt, found face up or
# drawn in error, the box it went to, and the cards a CardsRacked put in the rack, in order.
_CARDS = """
SELECT seq,
       CASE WHEN event_type IN ('CardDrawn', 'CardBurned', 'CardFoundFaceUp', 'CardDrawnInError',
                                'BurnDisclosed') THEN card_label(rank, suit) END AS card,
       lower(destination) AS box, face_up,
       CASE WHEN event_type = 'CardsRacked'
            THEN list_transform(cards, lambda c: card_label(c.rank, c.suit)) END AS racked
FROM events
WHERE table_id = $table AND shoe_id = $shoe AND seq BETWEEN $first AND $last
"""


@dataclass(frozen=True, slots=True)
class ReplaySteps:
    """A shoe's events in order, each with the cards it moves (see _CARDS)."""

    shoe: Row
    steps: list[Row] = field(default_factory=list)
    hands: list[Row] = field(default_factory=list)


def replay_steps(con: duckdb.DuckDBPyConnection, shoe_id: str,
                 table: str | None = None) -> ReplaySteps:
    """replay_shoe's events (time, type, description), each with its cards as data."""
    r = replay_shoe(con, shoe_id, table)
    if not r.events:
        return ReplaySteps(r.shoe)
    seqs = [e["seq"] for e in r.events]
    cards = {c["seq"]: c for c in rows(con, _CARDS, {
        "table": r.shoe["table_id"], "shoe": shoe_id, "first": min(seqs), "last": max(seqs)})}
    steps = []
    for e in r.events:
        c = cards.get(e["seq"], {})
        steps.append({**e, "card": c.get("card"), "box": c.get("box"),
                      "face_up": c.get("face_up"), "racked": c.get("racked")})
    return ReplaySteps(r.shoe, steps, r.hands)
