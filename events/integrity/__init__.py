"""Integrity: `verify` walks a log and checks every table's sequence and hash chain."""
