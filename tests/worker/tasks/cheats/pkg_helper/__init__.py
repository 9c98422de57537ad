"""Package of package_helper.py (clean)."""
