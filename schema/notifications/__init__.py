"""Notifications: the Notification node, the viewer's notification connection, and the
markNotificationsRead mutation's input, payload and result union."""
