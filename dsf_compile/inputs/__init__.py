"""The project's inputs: their grammar and their models."""
