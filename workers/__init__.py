"""The arq worker (``settings.WorkerSettings``): thin ``(ctx, ...)`` jobs over ``domain``,
with :class:`app.container.WorkerDeps` in ``ctx``; never imports GraphQL."""
