"""The account lifecycle (docs/api/account-lifecycle.md "Account lifecycle"): deleting an
account (a grace period, then a purge of its personal data by the worker), cancelling
that, and exporting one's data as a JSON archive."""
