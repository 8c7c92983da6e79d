"""Notifications: in-app records written by outbox consumers, read by the viewer, pushed
to devices through a pluggable sender (docs/api/notifications.md "Notifications")."""
