"""The route proxy a confined view's one way out is served by (docs/confinement.md): started on
``<scratch>/route.sock`` for a prepared view. Apart from ``shell/confinement.py`` so that ``doctor``, which
plans a view but serves no route, starts without the proxy's HTTP machinery."""

from __future__ import annotations

import os

from metaharness.pure.confinement import ROUTE_SOCKET, route_dialect
from metaharness.pure.kind import Kind
from metaharness.shell.confinement import Prepared
from metaharness.shell.loopback import RouteProxy


def start_route(kind: Kind, prepared: Prepared, scratch: str, placeholder: str | None) -> RouteProxy | None:
    """The route proxy on ``<scratch>/route.sock`` when the view has a route (raises ``OSError`` when it
    cannot listen)."""
    route = prepared.route
    shape = None if route is None else route_dialect(kind, route.paths[0])
    if route is None or shape is None:
        return None
    proxy = RouteProxy(shape, placeholder if route.custody is not None else None, route.custody, route.upstream,
                       route.paths)  # fmt: skip
    try:
        proxy.start(os.path.join(scratch, ROUTE_SOCKET))
    except OSError:
        proxy.stop()
        raise
    return proxy
