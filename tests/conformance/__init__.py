"""The official MCP conformance client suite, run against mcp-center (`scripts/conformance`)."""
