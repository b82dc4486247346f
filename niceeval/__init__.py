"""niceeval."""
