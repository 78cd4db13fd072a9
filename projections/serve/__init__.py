"""`pitlog serve`: one process follows the log into DuckDB and serves reads over HTTP."""
