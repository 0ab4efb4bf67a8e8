"""pytest fixtures for Firegate (docs/test-helpers.md)."""
from .client import EdgeClient, Firegate, FiregateProcess

__all__ = ["EdgeClient", "Firegate", "FiregateProcess"]
