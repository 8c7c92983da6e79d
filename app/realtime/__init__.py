"""Real-time infrastructure behind :mod:`domain.realtime.ports`: the hub and its links."""

from app.realtime.hub import Hub, HubClosedError, Subscription

__all__ = ["Hub", "HubClosedError", "Subscription"]
