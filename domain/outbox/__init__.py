"""The transactional outbox: events appended in the same transaction as the change."""
