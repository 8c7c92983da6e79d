"""The account lifecycle: changePassword, deleteAccount, cancelAccountDeletion and
exportMyData, and the DataExport type (README "Account lifecycle")."""
