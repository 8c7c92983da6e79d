"""Accounts as the graph shows them: the User node, its follower/following
connections, and the fields through which a User reaches every other area."""
