"""pitlog's write side: the domain model, red dog rules, codec, recorder, logs and simulator.

It never imports `projections` or `cli`."""
