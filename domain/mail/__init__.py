"""E-mail: the sender port, its configuration and messages (docs/api/email.md "E-mail")."""
