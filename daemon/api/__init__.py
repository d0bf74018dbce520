"""The REST API: the app factory, its dependencies and response models; routes in ``routes/``."""
