"""Content hashes of every view and stored table of a projected pitlog store, as JSON.

Usage: python tools/store_digest.py STORE.duckdb > digests.json
       python tools/store_digest.py --compare A.json B.json

A hash is (row count, MD5 over the sorted MD5s of every row), as projections.views.digest_views
computes for views, so it does not depend on row order. It checks that a change to the SQL's
layout left the projected contents unchanged (issue 15, "behaviour unchanged"): project the
same log before and after, and compare. Digests are taken in UTC, so two runs compare; the
alerts' raised_at (the projector's wall clock when it raised each) is left out of the hash.
"""

from __future__ import annotations

import json
import sys

import duckdb

from projections.views import digest_views

# Tables with a column stamped from the wall clock at projection time: two runs differ there.
WALL_CLOCK = {"alerts"}


def store_digests(path: str) -> dict[str, list]:
    with duckdb.connect(path, read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        out = {f"view {k}": list(v) for k, v in digest_views(con).items()}
        tables = [t for (t,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE NOT internal ORDER BY 1").fetchall()]
        for name in tables:
            select = "* EXCLUDE (raised_at)" if name in WALL_CLOCK else "*"
            ((count, digest),) = con.execute(
                f"SELECT count(*), coalesce(md5(string_agg(h, '' ORDER BY h)), '') "
                f'FROM (SELECT md5(CAST(t AS VARCHAR)) AS h '
                f'FROM (SELECT {select} FROM "{name}") AS t)').fetchall()
            out[f"table {name}"] = [count, digest]
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--compare"] and len(argv) == 3:
        a, b = (json.loads(open(p).read()) for p in argv[1:])
        differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        print(f"{len(a)} and {len(b)} hashes; {len(differ)} differ" +
              "".join(f"\n  {k}: {a.get(k)} != {b.get(k)}" for k in differ))
        return 1 if differ else 0
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    json.dump(store_digests(argv[0]), sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
