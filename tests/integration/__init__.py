"""Integration tests: the real SQLite and PostgreSQL stores, no mocks."""
