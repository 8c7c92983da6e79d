"""E-mail: the sender port, its configuration and the messages Roost sends
(docs/api/email.md "E-mail")."""
