"""Red dog itself: cards, the rules and paytables, jurisdiction profiles, the event types and
the exact theory. Pure: no I/O, no clock; imports nothing else of pitlog but events.errors."""
