"""Fake servers for tests: the OAuth authorization server and protected resource, and a scriptable
Streamable HTTP server (small Starlette apps) for tests that need a misbehaving peer."""
