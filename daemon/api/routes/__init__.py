"""The REST API routes, one module per resource."""
