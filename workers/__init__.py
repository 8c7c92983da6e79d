"""Background jobs (arq): settings and thin job functions ``(ctx, ...)`` over ``domain``.

Imports ``domain`` and Roost's settings/engine wiring (``app.settings``,
``app.database``) only.
"""
