"""pitlog's write side, one folder per concern: reddog/ (the game), wire/ (the bytes), log/
(storage), recording/, integrity/ and simulation/ (docs/architecture.md, "Module map").

It never imports `projections` or `cli` (tests/events/test_import_contract.py)."""
