"""The embedded log: append-only segment files in a folder, and its alert log beside them."""
