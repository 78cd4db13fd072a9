"""The seeded table simulator and its injected irregularities. A leaf: nothing in events/ or
projections/ imports it; only the CLI commands that simulate (and tests, benchmarks) do."""
