"""E-mail verification and password reset: inputs and payloads (docs/api/email.md)."""
