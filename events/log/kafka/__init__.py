"""The Kafka log: a topic keyed by table, its fenced writers, tail readers and alert topic."""
