"""Sign-up, log-in, sessions and the profile: the identity mutations' inputs, payloads
and result unions."""
