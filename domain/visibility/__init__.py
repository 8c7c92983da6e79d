"""Who may see what (docs/api/visibility.md "Who sees what"): the rule, its facts, their readers and
the SQL twin."""
