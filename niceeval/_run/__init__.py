"""Discovery, planning, scheduling and execution of runs."""
