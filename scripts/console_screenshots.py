"""Screenshots of every console page for docs/screenshots/, taken with the chromium the browser
tests use, over a simulated store with irregularities (the same one the tests build).

    .venv/bin/python scripts/console_screenshots.py [docs/screenshots]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from console_support import CHROMIUM, build_store, running  # noqa: E402


def main(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, running(build_store(Path(tmp))) as s:
        cur = s.con.cursor()
        (alert,) = cur.execute("SELECT alert_seq FROM alerts WHERE code = 'WRONG_PAYOUT' "
                               "ORDER BY alert_seq LIMIT 1").fetchall()
        ((shoe, table, first),) = cur.execute(  # the third card of a round, mid-shoe
            "SELECT shoe_id, table_id, seq FROM events WHERE event_type = 'CardDrawn' "
            "AND destination = 'MIDDLE' AND table_id = 'T01' ORDER BY seq LIMIT 1 OFFSET 12"
        ).fetchall()
        ((gap,),) = cur.execute(  # a moment between two rounds of T02, on the casino's clock
            "SELECT strftime(timezone('America/New_York', ended_at + INTERVAL 2 SECOND), "
            "'%Y-%m-%dT%H:%M:%S') FROM rounds WHERE table_id = 'T02' ORDER BY started_at "
            "LIMIT 1 OFFSET 5").fetchall()
        cur.close()
        shots = {
            "tables": "/tables",
            "alerts": "/alerts-page",
            "dispute": f"/dispute?alert={alert[0]}",
            "dispute-outside": f"/dispute?table=T02&at={gap}",
            "replay": f"/replay/{shoe}?table={table}&seq={first}",
            "incident": f"/incident?alert={alert[0]}",
        }
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM))
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            for name, path in shots.items():
                page.goto(s.url + path)
                page.wait_for_timeout(500)
                page.screenshot(path=str(out / f"{name}.png"))
                print(out / f"{name}.png")
            browser.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshots")
