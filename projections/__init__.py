"""pitlog's read side: the projector, DuckDB tables and views, and the queries over them."""
