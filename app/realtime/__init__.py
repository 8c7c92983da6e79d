"""Real-time infrastructure: the adapters behind :mod:`domain.realtime.ports`.

``hub`` (:class:`~app.realtime.hub.Hub`: the per-process Redis pub/sub multiplexer and
the presence heartbeat) and ``links`` (its Redis pub/sub connections: plain, or sharded
on a Redis Cluster). The composition root builds one hub per API process
(app/container.py); schema/ and resolvers/ see it only as
:class:`domain.realtime.ports.Subscriptions`.
"""

from app.realtime.hub import Hub, HubClosedError, Subscription

__all__ = ["Hub", "HubClosedError", "Subscription"]
