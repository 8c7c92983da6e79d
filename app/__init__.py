"""Wiring: settings, the ASGI app, the CLI and the embedded services. The only package
that reads the environment."""
