"""A dispute lookup about a round whose shoe is not kept (every open shoe's round: its queries
run, dispute_sql.py), old beside new in one run, each on a store whose views are its own
(issue 19, item 4; session 27: the rules' changes of that session made the new views' ledger
and round queries do more, and this says what that costs).

    PYTHONPATH=. python benchmarks/bench_dispute_unkept.py --new-db NEW.duckdb \
        --old-db OLD.duckdb --old-repo OLD [--rounds 40] [--repeats 3]

NEW.duckdb and OLD.duckdb: one log projected by each checkout (so neither reads views another
pitlog made, which would evaluate the anomaly view whole); no shoe kept in either (a store
`pitlog project` made: the keeper is `pitlog serve`'s). The picks: `--rounds` rounds of any
shoe from NEW's round_money, seed 5, the middle of each round (bench_dispute_kept._picks'
moments). Each repeat runs one child per way (bench_dispute_kept._child: every lookup on one
read-only connection, wall and CPU per call, each answer digested), old and new taking
turns, the order reversed every other repeat. The digests are compared pick by pick.

One JSON line per way and a summary line. Not a test: no timing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dispute_kept import _child, _picks, stats  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--new-db", type=Path, required=True)
    ap.add_argument("--old-db", type=Path, required=True)
    ap.add_argument("--old-repo", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    picks = _picks(a.new_db, a.rounds, closed=False, seed=5)
    ways = {"old": (a.old_repo, a.old_db), "new": (REPO, a.new_db)}
    calls: dict[str, list[list[object]]] = {"old": [], "new": []}
    digests: dict[str, list[str]] = {}
    for repeat in range(a.repeats):
        for way in (("old", "new") if repeat % 2 == 0 else ("new", "old")):
            got = _child(*ways[way], picks)
            calls[way].extend(got)
            digests.setdefault(way, [str(d) for _w, _c, d in got])
    for way, rows in calls.items():
        print(json.dumps({"way": way, "calls": len(rows),
                          "wall_ms": stats([float(w) for w, _c, _d in rows]),  # type: ignore[arg-type]
                          "cpu_ms": stats([float(c) for _w, c, _d in rows])}))  # type: ignore[arg-type]
    same = sum(o == n for o, n in zip(digests["old"], digests["new"], strict=True))
    print(json.dumps({"summary": True, "picks": len(picks), "answers_equal_old_new": same}))


if __name__ == "__main__":
    main()
