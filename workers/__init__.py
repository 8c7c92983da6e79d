"""The arq worker's entry point (``settings.WorkerSettings``) and its thin job functions
``(ctx, ...)`` over ``domain``.

Its infrastructure comes from the composition root (``app.container``), as a typed
:class:`app.container.WorkerDeps` in ``ctx`` (``workers.deps``); it never imports
GraphQL (``schema``, ``resolvers``, the ASGI app).
"""
