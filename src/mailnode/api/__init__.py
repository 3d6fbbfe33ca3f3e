"""The HTTP API: a FastAPI app built by ``create_app(node)``, one router per domain, OpenAPI at ``/docs``."""
