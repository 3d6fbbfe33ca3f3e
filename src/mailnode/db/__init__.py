"""Storage: the shared SQLAlchemy Core metadata, the engine factory, the statement meter and migrations."""
