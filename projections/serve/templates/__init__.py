"""The console's pages, rendered on the server as plain HTML strings (no template engine, no CDN:
every asset is served by pitlog from ../static/). One module per page; base.py holds the layout
and the cells every page shares (times via projections/localtime.py, money, cards)."""
