"""Who may see what (docs/api/visibility.md "Who sees what"): the pure rule (``rules``)
over typed facts (``facts``), the batch readers of those facts (``readers``) and the
rule's SQL twin for writes and bulk reads (``sql``)."""
