"""End-to-end tests: the real `niceeval` command in temporary projects."""
