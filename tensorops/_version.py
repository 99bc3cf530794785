"""The package version, in one place: setup.py reads this line (without importing tensorops) for the
distribution and the C++ build, and tensorops._extension re-exports it."""
__version__ = "0.1.0"
