"""The query parameters of an HTTP request, checked: one definition for the JSON API
(api.py), the console's pages (console.py) and the alert stream (sse.py)."""

from __future__ import annotations

from starlette.requests import Request

from events.errors import PitlogError


class BadRequest(PitlogError):
    """A query parameter the API cannot use (answered 400)."""


def params(request: Request, *allowed: str, several: tuple[str, ...] = (),
           blank_is_absent: bool = False) -> dict[str, str]:
    """The query parameters, refusing unknown ones, one given twice (but those of `several`,
    which the endpoint reads with api.many) and, unless `blank_is_absent` (the console's forms,
    which send every field), an empty one: a typo must not widen a query silently (`?table=`
    read as every table, `?table=A&table=B` as B alone; an outside review, session 37).
    `token` is the browsers' way to authenticate (app.BearerAuth), not a parameter."""
    given = request.query_params
    unknown = sorted(set(given) - set(allowed) - {"token"})
    if unknown:
        raise BadRequest(f"unknown parameter {', '.join(unknown)}; this endpoint takes "
                         f"{', '.join(allowed) or 'none'}")
    for name in sorted(set(given) - {"token"}):
        values = given.getlist(name)
        if len(values) > 1 and name not in several:
            raise BadRequest(f"{name} given {len(values)} times; it takes one value")
        if not blank_is_absent and "" in values:
            raise BadRequest(f"{name} is empty: give it a value")
    return {k: v for k, v in given.items() if v != "" and k != "token"}
