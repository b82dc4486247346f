"""Defining evals and configuration, and the context `t` of one run.

Design: docs/design/eval-dsl.md
"""
