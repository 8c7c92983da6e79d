"""Real-time infrastructure behind :mod:`domain.realtime.ports`: ``hub`` (one Redis
pub/sub multiplexer per API process) and ``links`` (its connections).
"""

from app.realtime.hub import Hub, HubClosedError, Subscription

__all__ = ["Hub", "HubClosedError", "Subscription"]
