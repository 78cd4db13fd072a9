"""How long `pitlog simulate` takes to give up when its Kafka broker is lost for good mid-run
(issue 14: 396 s, against the documented timeout_s of 120 s), and what it prints.

    .venv/bin/python benchmarks/bench_broker_lost.py

Starts a broker of its own (tests/kafka_support.dedicated_broker; never the shared one), lets
simulate append to it for 25 s, stops the broker and times the rest. A measurement, not a test
(no timings in tests): tests/kafka/test_kafka_faults.py asserts the error line and exit code.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from kafka_support import dedicated_broker  # noqa: E402 - tests/ is not a package


def main() -> None:
    with tempfile.TemporaryDirectory() as state, dedicated_broker(Path(state)) as broker:
        uri = f"kafka://{broker.bootstrap}/pitlog.bench.broker-lost"
        proc = subprocess.Popen([str(ROOT / ".venv" / "bin" / "pitlog"), "simulate", "--log", uri,
                                 "--tables", "4", "--rounds", "20000"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(25)
        assert proc.poll() is None, "simulate ended before the broker was stopped"
        broker.stop()
        stopped = time.monotonic()
        err = proc.communicate(timeout=900)[1]
        print(f"gave up {time.monotonic() - stopped:.1f} s after the broker stopped, "
              f"exit code {proc.returncode}; stderr:\n{err}")


if __name__ == "__main__":
    main()
