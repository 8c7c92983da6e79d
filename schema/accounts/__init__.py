"""The account lifecycle: changePassword, deleteAccount, cancelAccountDeletion and
exportMyData, and the DataExport type (docs/api/account-lifecycle.md "Account lifecycle")."""
