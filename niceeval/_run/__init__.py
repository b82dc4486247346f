"""Discovery, planning, scheduling and execution of runs.

Design: docs/design/runner.md
"""
