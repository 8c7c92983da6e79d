"""Mute and the viewer's lists of blocked and muted accounts (docs/api/mute-and-block.md
"Mute and blocked list"): the mute/unmute payloads and result unions, and the two
connections."""
