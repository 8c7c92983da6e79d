"""The account lifecycle (docs/api/account-lifecycle.md "Account lifecycle"): deletion with a grace
period and purge, cancellation, data export."""
