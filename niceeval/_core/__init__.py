"""The shared vocabulary of niceeval: assertions, outcomes, events, results, errors. Imports no feature.

Design: docs/design/layout.md
"""
