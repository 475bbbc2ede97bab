"""Fake servers for tests (OAuth authorization server and protected resource)."""
