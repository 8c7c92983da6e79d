"""Mute and the viewer's lists of blocked and muted accounts (README "Mute and blocked
list"): the mute/unmute payloads and result unions, and the two connections."""
