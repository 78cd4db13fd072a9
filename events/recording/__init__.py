"""Recording: the recorder that seals events onto a log, and JSON-lines ingest from devices."""
