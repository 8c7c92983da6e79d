"""Notifications: in-app records written by outbox consumers, read by the viewer, pushed
to devices through a pluggable sender (issue item 5, "Notifications")."""
