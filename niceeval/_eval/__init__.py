"""Defining evals and configuration, and the context `t` of one run."""
