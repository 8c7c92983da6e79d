"""Who may see what (README "Who sees what"): the pure rule (``rules``) over typed facts
(``facts``), the batch readers of those facts (``readers``) and the rule's SQL twin for
writes and bulk reads (``sql``)."""
