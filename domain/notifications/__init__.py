"""Notifications: in-app records written by outbox consumers, pushed to devices
(docs/api/notifications.md "Notifications")."""
