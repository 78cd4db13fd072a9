"""pitlog's command line: thin Typer commands over the library."""
