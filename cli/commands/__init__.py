"""The commands of `pitlog`, one module per concern; cli/app.py imports a module only when one
of its commands runs or shows its own help, so each imports at its top what it needs."""
