"""Scriptable fake servers (small Starlette apps) for tests that need a misbehaving peer."""
