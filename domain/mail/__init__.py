"""E-mail: the sender port, its configuration and the messages Roost sends (README
"E-mail")."""
